package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/cluster/clustertest"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// Changed is closed at every change of a key's holders that the node's
// watch tells of: a grant, an expiry, a release handing the key to a
// waiter; not at an extend, which changes no hands. Close ends the poll
// (the goroutine-leak check of TestMain).
func TestChanged_TellsEveryChangeOfHands(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	c := clustertest.Start(t, 3, nil)
	cl, err := client.New(client.Config{Addrs: c.Addrs()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := t.Context()
	acquire := func(owner string, ttl time.Duration, wait bool) {
		t.Helper()
		g, err := cl.Acquire(ctx, drivers.Request{Keys: []string{"k"}, Owner: owner, TTL: ttl, Wait: wait})
		if err != nil || !g.Acquired {
			t.Errorf("acquire by %s: %+v, %v", owner, g, err)
		}
	}
	told := func(what string, do func()) {
		t.Helper()
		ch, stop := cl.Changed("k")
		defer stop()
		do()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("not told of %s within 10s", what)
		}
	}
	told("the poll's first read", func() {})
	told("a grant", func() { acquire("a", 300*time.Millisecond, false) })
	told("an expiry", func() {})
	told("a grant", func() { acquire("a", time.Minute, false) })

	ch, stop := cl.Changed("k")
	if ok, err := cl.Extend(ctx, "k", "a", time.Minute); !ok || err != nil {
		t.Fatalf("extend: %v, %v", ok, err)
	}
	select {
	case <-ch:
		t.Fatal("told of an extend, which changes no hands")
	case <-time.After(300 * time.Millisecond):
	}
	stop()

	waited := make(chan struct{})
	go func() {
		defer close(waited)
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		g, err := cl.Acquire(wctx, drivers.Request{Keys: []string{"k"}, Owner: "b", TTL: time.Minute, Wait: true})
		if err != nil || !g.Acquired {
			t.Errorf("the waiter: %+v, %v", g, err)
		}
	}()
	poll.Until(t, 10*time.Second, "the waiter queued", func() bool {
		l, _, err := cl.Get(ctx, "k")
		return err == nil && l.Waiters == 1
	})
	told("a hand-off to the waiter", func() {
		if ok, err := cl.Release(ctx, "k", "a"); !ok || err != nil {
			t.Errorf("release: %v, %v", ok, err)
		}
	})
	<-waited
}
