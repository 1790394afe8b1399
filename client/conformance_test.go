package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/bench/manager"
	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/cluster"
	"github.com/zerotal/lock/cluster/clustertest"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/internal/loopback"
)

// startCluster starts three real nodes in this process on loopback ports
// and stops them when the test ends. It returns their HTTP addresses.
func startCluster(t *testing.T) ([]string, []*cluster.Node) {
	t.Helper()
	return startClusterWith(t, nil)
}

// startClusterWith is startCluster with mod applied to each node's
// configuration before it starts.
func startClusterWith(t *testing.T, mod func(*cluster.Config)) ([]string, []*cluster.Node) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	c := clustertest.Start(t, 3, mod)
	return c.Addrs(), c.Nodes
}

type harness struct{ addrs []string }

func (h harness) NewDriver(context.Context) (drivers.Driver, error) {
	return client.New(client.Config{Addrs: h.addrs, AttemptTimeout: conformanceAttemptTimeout})
}

// conformanceAttemptTimeout is the conformance clients' AttemptTimeout.
// The suite checks the driver contract on a healthy cluster, where a call
// must succeed; under -race on a loaded machine a node has stayed silent
// past the default 500ms, and the client then rightly answered a release
// "outcome unknown". Giving up on a silent node is tested by the nemesis
// and the stream tests, with the default.
const conformanceAttemptTimeout = 3 * time.Second

// TestConformance runs the driver conformance suite through the client
// against a real three-node cluster.
func TestConformance(t *testing.T) {
	addrs, _ := startCluster(t)
	driverstest.Run(t, func(t *testing.T) driverstest.Harness { return harness{addrs: addrs} })
}

// TestConformance_Shared runs the semaphore and read/write lock sections
// against a real three-node cluster.
func TestConformance_Shared(t *testing.T) {
	addrs, _ := startCluster(t)
	driverstest.RunShared(t, func(t *testing.T) driverstest.Harness { return harness{addrs: addrs} })
}

// TestClient_FailsOverWhenTheLeaderStops stops the leader in the middle
// of a run of acquisitions: the client finds the new leader, and a lock
// held before the failover is still held by its owner afterwards.
func TestClient_FailsOverWhenTheLeaderStops(t *testing.T) {
	addrs, nodes := startCluster(t)
	c, err := client.New(client.Config{Addrs: addrs})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	fence, ok, err := driverstest.Take(ctx, c, "held", "o1", time.Minute)
	if err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	var leader *cluster.Node
	for _, n := range nodes {
		if n.IsLeader() {
			leader = n
		}
	}
	if leader == nil {
		t.Fatal("no leader")
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := leader.Shutdown(sctx); err != nil {
		t.Fatalf("shutdown leader: %v", err)
	}
	// The next writes succeed on the new leader.
	for i := range 5 {
		if _, ok, err := driverstest.Take(ctx, c, fmt.Sprintf("after-%d", i), "o2", time.Minute); err != nil || !ok {
			t.Fatalf("Acquire after failover = %v, %v", ok, err)
		}
	}
	info, found, err := c.Get(ctx, "held")
	if err != nil || !found || info.Owner != "o1" || info.Fence != fence {
		t.Fatalf("lock held before the failover: %+v found=%v err=%v", info, found, err)
	}
	if info.Remaining <= 0 || info.Remaining > time.Minute {
		t.Fatalf("remaining TTL after failover = %v", info.Remaining)
	}
	// Refreshing by the same owner keeps the fence.
	if f, ok, err := driverstest.Take(ctx, c, "held", "o1", time.Minute); err != nil || !ok || f != fence {
		t.Fatalf("refresh after failover = %d, %v, %v; want fence %d", f, ok, err, fence)
	}
}

// NodeMetrics reads one node's exposition with the client's token; a
// wrong token is the node's 401, and a node that is not there is
// unavailable.
func TestClient_NodeMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	const token = "metrics-token-0123456789"
	addr := clustertest.Start(t, 1, func(cfg *cluster.Config) { cfg.Token = token }).Addrs()[0]
	c, err := client.New(client.Config{Addrs: []string{addr}, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b, err := c.NodeMetrics(t.Context(), addr)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "\nprocess_cpu_seconds_total ") {
		t.Fatalf("the exposition has no unlabelled process_cpu_seconds_total:\n%.2000s", b)
	}

	wrong, err := client.New(client.Config{Addrs: []string{addr}, Token: "wrong"})
	if err != nil {
		t.Fatal(err)
	}
	defer wrong.Close()
	var ae *client.APIError
	if _, err := wrong.NodeMetrics(t.Context(), addr); !errors.As(err, &ae) || ae.StatusCode != http.StatusUnauthorized {
		t.Fatalf("NodeMetrics with a wrong token: %v, want a 401 APIError", err)
	}

	dead := loopback.MustFreeAddr(t)
	if _, err := c.NodeMetrics(t.Context(), dead); !errors.Is(err, drivers.ErrUnavailable) {
		t.Fatalf("NodeMetrics of %s, where nothing listens: %v, want ErrUnavailable", dead, err)
	}
}

// BenchmarkShared: semaphore and read-lock cycles beside the mutex's
// (manager.BenchShared) on a real three-node cluster (in this
// process, default configs), through an untuned client.
func BenchmarkShared(b *testing.B) {
	c := clustertest.Start(b, 3, nil)
	d, err := client.New(client.Config{Addrs: c.Addrs()})
	if err != nil {
		b.Fatal(err)
	}
	manager.BenchShared(b, d, 2*time.Second)
}
