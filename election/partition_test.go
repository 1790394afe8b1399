package election_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers/redis/redistest"
	"github.com/zerotal/lock/election"
	"github.com/zerotal/lock/internal/testkit/realbackends"
	"github.com/zerotal/lock/internal/testkit/tcpproxy"
)

// A leader cut off from the backend (its refreshes vanish in a black
// hole) is told it no longer leads before the backend can let its lease
// run out, so before the standby, which still reaches the backend, can
// lead: the two leaderships never overlap, and the terms grow.
func TestElection_PartitionedLeaderStopsBeforeTheStandbyLeads(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	srv := redistest.Start(t)
	proxy, err := tcpproxy.Start(srv.Addr(), tcpproxy.Blackhole)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	open := func(url string) *lock.Manager {
		return realbackends.Open(t, lock.Config{Driver: "redis", Redis: lock.RedisConfig{URL: url}})
	}
	const ttl = 1500 * time.Millisecond
	ea := mustNew(t, open("redis://"+proxy.Addr()), "part", ttl)
	eb := mustNew(t, open(srv.URL()), "part", ttl)

	a, err := ea.Campaign(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	bLeads := make(chan time.Time, 1)
	var b *election.Leadership
	go func() {
		l, err := eb.Campaign(t.Context(), "b")
		if err == nil {
			b = l
			bLeads <- time.Now()
		}
		close(bLeads)
	}()

	proxy.Cut()
	var aTold time.Time
	select {
	case <-a.Context().Done():
		aTold = time.Now()
	case <-time.After(10 * time.Second):
		t.Fatal("the cut-off leader was never told")
	}
	if _, ok := errors.AsType[*lock.LostError](context.Cause(a.Context())); !ok {
		t.Errorf("cause %v; want a *lock.LostError", context.Cause(a.Context()))
	}
	at, ok := <-bLeads
	if !ok {
		t.Fatal("the standby never led")
	}
	if !aTold.Before(at) {
		t.Fatalf("the standby led at %v, before the cut-off leader was told at %v: two leaders at once", at.Format(time.StampMicro), aTold.Format(time.StampMicro))
	}
	if b.Term() <= a.Term() {
		t.Fatalf("term %d after %d", b.Term(), a.Term())
	}
	proxy.Heal()
	_ = b.Resign(t.Context())
}
