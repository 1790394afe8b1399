package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/cluster"
	"github.com/zerotal/lock/cluster/clustertest"
	"github.com/zerotal/lock/internal/loopback"
)

// startNode starts a one-node cluster that requires token and returns its
// HTTP address once it leads.
func startNode(t *testing.T, token string) string {
	t.Helper()
	return clustertest.Start(t, 1, func(c *cluster.Config) { c.Token = token }).Addrs()[0]
}

// Open of the cluster driver contacts the cluster: with nobody listening it
// fails at once, even with no deadline on its context, instead of handing
// back a Manager whose first call fails after the client's timeout.
func TestOpen_ClusterNobodyListensFailsFast(t *testing.T) {
	t.Parallel()
	addrs := []string{loopback.MustFreeAddr(t), loopback.MustFreeAddr(t)}
	start := time.Now()
	m, err := lock.Open(context.Background(), lock.Config{Driver: "cluster", Cluster: lock.ClusterConfig{Addrs: addrs}})
	took := time.Since(start)
	if m != nil {
		_ = m.Close()
	}
	if m != nil || !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("Open with no node listening = %v, %v; want ErrUnavailable", m, err)
	}
	if errors.Is(err, lock.ErrInvalid) {
		t.Errorf("an unreachable cluster is not bad input: %v", err)
	}
	// Connections are refused at once; the bound is the client's timeout.
	if took >= client.DefaultTimeout {
		t.Errorf("Open took %v, want less than %v", took, client.DefaultTimeout)
	}
	t.Logf("Open failed in %v: %v", took, err)
}

// ctx bounds the contact: a deadline that has passed ends it with ctx's
// error.
func TestOpen_ClusterHonoursTheContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	m, err := lock.Open(ctx, lock.Config{Driver: "cluster", Cluster: lock.ClusterConfig{Addrs: []string{loopback.MustFreeAddr(t)}}})
	if m != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("Open with a cancelled context = %v, %v; want context.Canceled", m, err)
	}
}

func TestOpen_ClusterContactsARealNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster node")
	}
	t.Parallel()
	addr := startNode(t, "s3cret-0123456789abcdef")
	dead := loopback.MustFreeAddr(t)

	// A dead address first: the next node answers.
	m, err := lock.Open(t.Context(), lock.Config{Driver: "cluster",
		Cluster: lock.ClusterConfig{Addrs: []string{dead, addr}, Token: "s3cret-0123456789abcdef"}})
	if err != nil {
		t.Fatalf("Open of a running cluster: %v", err)
	}
	defer m.Close()
	ran := false
	if err := m.Try(t.Context(), "job", 5*time.Second, func(context.Context, *lock.Lock) error {
		ran = true
		return nil
	}); err != nil || !ran {
		t.Fatalf("Try: ran %v, err %v", ran, err)
	}

	// A token the node refuses is reported by Open, as such.
	m2, err := lock.Open(t.Context(), lock.Config{Driver: "cluster",
		Cluster: lock.ClusterConfig{Addrs: []string{addr}, Token: "wrong"}})
	if m2 != nil || !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("Open with a wrong token = %v, %v; want client.ErrUnauthorized", m2, err)
	}
	if errors.Is(err, lock.ErrUnavailable) {
		t.Errorf("a refused token is not an outage: %v", err)
	}
}
