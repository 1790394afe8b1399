// Package clustertest starts in-process clusters of real nodes for the
// tests of packages that talk to a cluster: the client, the cluster
// driver, the lock package itself.
//
// Package cluster's own tests cannot use it (it imports cluster); they
// have helpers of their own.
package clustertest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/zerotal/lock/cluster"
	"github.com/zerotal/lock/internal/loopback"
)

// Timeouts of Start: for all the nodes to know a leader, and for each
// node's shutdown at the test's end.
const (
	LeaderTimeout   = 20 * time.Second
	ShutdownTimeout = 10 * time.Second
)

// Cluster is a cluster of real nodes running in this process on loopback
// ports.
type Cluster struct {
	// Nodes are the nodes, n1, n2, ... in that order.
	Nodes []*cluster.Node
}

// Start starts a cluster of n nodes, n1 to nN, in this process: each has
// its data directory in t.TempDir() and listens on free loopback ports.
// One node starts a cluster of one; several bootstrap one cluster with
// all of them as voters. Start returns once every node knows a leader
// that has taken over, and the test's end shuts every node down.
//
// mod, if not nil, is applied to each node's configuration before the
// node starts; it may change anything, the ID, the data directory and the
// addresses too (the bootstrap list is made before, with the defaults).
// Node logs at level Warn and above go to t.Log unless mod sets a Logger.
func Start(t testing.TB, n int, mod func(*cluster.Config)) *Cluster {
	t.Helper()
	if n < 1 {
		t.Fatalf("clustertest.Start: %d nodes, want at least one", n)
	}
	// A port picked free can be taken by another test process before the
	// node binds it: start again on other ports, a few times.
	for attempt := 1; ; attempt++ {
		c, err := start(t, n, mod)
		if err == nil {
			return c
		}
		if attempt == 3 || !errors.Is(err, syscall.EADDRINUSE) {
			t.Fatal(err)
		}
		t.Logf("clustertest.Start: %v; again on other ports", err)
	}
}

func start(t testing.TB, n int, mod func(*cluster.Config)) (*Cluster, error) {
	t.Helper()
	dir := t.TempDir()
	peers := make([]cluster.Peer, n)
	for i := range peers {
		peers[i] = cluster.Peer{ID: fmt.Sprintf("n%d", i+1), RaftAddr: loopback.MustFreeAddr(t)}
		if n > 1 {
			peers[i].HTTPAddr = loopback.MustFreeAddr(t)
		} else {
			peers[i].HTTPAddr = "127.0.0.1:0" // nobody needs to know it in advance
		}
	}
	c := &Cluster{Nodes: make([]*cluster.Node, n)}
	for i, p := range peers {
		cfg := cluster.Config{
			ID: p.ID, DataDir: filepath.Join(dir, p.ID), RaftAddr: p.RaftAddr, HTTPAddr: p.HTTPAddr,
			Logger:     slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})).With("node", p.ID),
			RaftSecret: RaftSecret,
		}
		if n > 1 {
			cfg.Bootstrap = peers
		} else {
			cfg.BootstrapSelf = true
		}
		if mod != nil {
			mod(&cfg)
		}
		node, err := cluster.NewNode(t.Context(), cfg)
		if err != nil {
			c.stop(t)
			return nil, fmt.Errorf("start %s: %w", cfg.ID, err)
		}
		c.Nodes[i] = node
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
			defer cancel()
			if err := node.Shutdown(ctx); err != nil {
				t.Errorf("shutdown %s: %v", cfg.ID, err)
			}
		})
	}
	ctx, cancel := context.WithTimeout(t.Context(), LeaderTimeout)
	defer cancel()
	for _, node := range c.Nodes {
		if err := node.WaitForLeader(ctx); err != nil {
			t.Fatalf("no leader: %v", err)
		}
	}
	return c, nil
}

// stop shuts the nodes started so far down (a start that failed half-way).
func (c *Cluster) stop(t testing.TB) {
	for _, node := range c.Nodes {
		if node == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
		if err := node.Shutdown(ctx); err != nil {
			t.Errorf("shutdown %s: %v", node.ID(), err)
		}
		cancel()
	}
}

// RaftSecret is the raft secret of the clusters Start starts.
const RaftSecret = "clustertest-raft-secret-0123456789"

// Addrs are the nodes' HTTP addresses, in the order of Nodes.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		addrs[i] = n.HTTPAddr()
	}
	return addrs
}

// Leader is the node that leads the cluster now, or nil if none does.
func (c *Cluster) Leader() *cluster.Node {
	for _, n := range c.Nodes {
		if n.IsLeader() {
			return n
		}
	}
	return nil
}

// testWriter sends node logs to t.Log, so they show only on failure (or
// with -v).
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}
