package election_test

import (
	"context"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/cluster/clustertest"
	"github.com/zerotal/lock/internal/testkit/poll"
	"github.com/zerotal/lock/internal/testkit/realbackends"
)

// The coordinator's own failover neither ends nor resets a leadership:
// with the cluster's raft leader shut down under it, the election's
// leader keeps its context, its term and its lease, refreshed through the
// new raft leader, for twice the lease.
func TestElection_SurvivesTheClusterLeadersFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	c := clustertest.Start(t, 3, nil)
	m := realbackends.Open(t, lock.Config{Driver: "cluster", Cluster: lock.ClusterConfig{Addrs: c.Addrs()}})
	const ttl = 6 * time.Second
	e := mustNew(t, m, "coordinated", ttl)
	l := mustCampaign(t, e, "a")
	old := c.Leader()
	if old == nil {
		t.Fatal("no raft leader")
	}
	ctx, cancel := context.WithTimeout(context.Background(), clustertest.ShutdownTimeout)
	err := old.Shutdown(ctx)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	poll.Until(t, 20*time.Second, "a new raft leader", func() bool {
		n := c.Leader()
		return n != nil && n != old
	})
	poll.Until(t, 3*ttl, "twice the lease to pass", func() bool { return time.Since(stopped) > 2*ttl })
	if err := l.Context().Err(); err != nil {
		t.Fatalf("the leadership ended across the raft failover: %v", context.Cause(l.Context()))
	}
	got, err := e.Leader(t.Context())
	if err != nil || got.Value != "a" || got.Term != l.Term() || got.Remaining < ttl/3 {
		t.Fatalf("Leader after the raft failover = %+v, %v; want a at term %d with its lease refreshed", got, err, l.Term())
	}
	if err := l.Resign(t.Context()); err != nil {
		t.Fatal(err)
	}
}
