package election_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/cluster/clustertest"
	"github.com/zerotal/lock/election"
	"github.com/zerotal/lock/internal/testkit/realbackends"
)

// On a cluster, Observe is told by the node's watch (GET /v1/watch), not
// by its timer: with a look every hour, an observer still sees a
// candidate lead, resign and the next one take over, each soon after it
// happened; the figure is the delay from a resignation to the observer's
// report.
func TestObserve_ClusterIsPushedByTheWatch(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	c := clustertest.Start(t, 3, nil)
	m := realbackends.Open(t, lock.Config{Driver: "cluster", Cluster: lock.ClusterConfig{Addrs: c.Addrs()}})
	e := mustNew(t, m, "pushed", 30*time.Second)
	ctx, cancel := context.WithCancel(t.Context())
	changes := e.Observe(ctx, time.Hour)
	defer func() {
		cancel()
		for range changes {
		}
	}()
	next := func(what string, want func(election.Change) bool) time.Time {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case ch := <-changes:
				if want(ch) {
					return time.Now()
				}
			case <-deadline:
				t.Fatalf("the observer was not told %s within 10s (its timer looks every hour)", what)
			}
		}
	}
	next("the first look", func(election.Change) bool { return true })
	const rounds = 30
	var delays []time.Duration
	for i := range rounds {
		g, err := e.Campaign(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		next("a leader", func(ch election.Change) bool { return ch.Leading && ch.Leader.Term == g.Term() })
		start := time.Now()
		if err := g.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		delays = append(delays, next("the resignation", func(ch election.Change) bool { return !ch.Leading }).Sub(start))
		_ = i
	}
	slices.Sort(delays)
	p50, p99 := delays[len(delays)/2], delays[len(delays)*99/100]
	t.Logf("resignation seen by the observer: p50 %v, p99 %v over %d rounds (3 in-process nodes)", p50, p99, rounds)
	if p99 > 2*time.Second {
		t.Errorf("p99 %v; want the watch to tell within a round trip or so", p99)
	}
}
