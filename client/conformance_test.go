package client_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/cluster"
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
	peers := make([]cluster.Peer, 3)
	for i := range peers {
		peers[i] = cluster.Peer{ID: fmt.Sprintf("n%d", i+1), RaftAddr: loopback.MustFreeAddr(t), HTTPAddr: loopback.MustFreeAddr(t)}
	}
	nodes := make([]*cluster.Node, 3)
	addrs := make([]string, 3)
	dir := t.TempDir()
	for i, p := range peers {
		cfg := cluster.Config{
			ID: p.ID, DataDir: filepath.Join(dir, p.ID), RaftAddr: p.RaftAddr, HTTPAddr: p.HTTPAddr,
			Bootstrap: peers,
			Logger:    slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})).With("node", p.ID),
		}
		if mod != nil {
			mod(&cfg)
		}
		n, err := cluster.NewNode(t.Context(), cfg)
		if err != nil {
			t.Fatalf("start %s: %v", p.ID, err)
		}
		nodes[i], addrs[i] = n, n.HTTPAddr()
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := n.Shutdown(ctx); err != nil {
				t.Errorf("shutdown %s: %v", p.ID, err)
			}
		})
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for _, n := range nodes {
		if err := n.WaitForLeader(ctx); err != nil {
			t.Fatalf("no leader: %v", err)
		}
	}
	return addrs, nodes
}

// testWriter sends node logs to t.Log, so they show only on failure.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

type harness struct{ addrs []string }

func (h harness) NewDriver(context.Context) (drivers.Driver, error) {
	return client.New(client.Config{Addrs: h.addrs})
}

// TestConformance runs the driver conformance suite through the client
// against a real three-node cluster.
func TestConformance(t *testing.T) {
	addrs, _ := startCluster(t)
	driverstest.Run(t, func(t *testing.T) driverstest.Harness { return harness{addrs: addrs} })
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
	fence, ok, err := c.Acquire(ctx, "held", "o1", time.Minute)
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
		if _, ok, err := c.Acquire(ctx, fmt.Sprintf("after-%d", i), "o2", time.Minute); err != nil || !ok {
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
	if f, ok, err := c.Acquire(ctx, "held", "o1", time.Minute); err != nil || !ok || f != fence {
		t.Fatalf("refresh after failover = %d, %v, %v; want fence %d", f, ok, err, fence)
	}
}
