package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
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

// A node without the watch (an older release) answers 404 at once, as for
// a free key: the poll then asks no more than once a second, instead of
// spinning against it.
func TestChanged_NodeWithoutTheWatchIsNotSpunOn(t *testing.T) {
	var watches atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == api.PathWatch {
			watches.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"code":"not_found","message":"cluster: no endpoint"}`))
	}))
	defer srv.Close()
	cl, err := client.New(client.Config{Addrs: []string{srv.URL}, NoStream: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ch, stop := cl.Changed("k")
	defer stop()
	select {
	case <-ch: // the poll's first read
	case <-time.After(10 * time.Second):
		t.Fatal("not told of the poll's first read within 10s")
	}
	start := time.Now()
	poll.Until(t, 10*time.Second, "1.5s of polling", func() bool { return time.Since(start) > 1500*time.Millisecond })
	if n := watches.Load(); n > 4 {
		t.Fatalf("%d watches in %v of a node that does not wait; want a poll a second at most", n, time.Since(start))
	}
}
