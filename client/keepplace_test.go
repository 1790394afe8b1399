package client_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// countRequests counts the requests to path sent through it.
type countRequests struct {
	path string
	n    atomic.Int64
	next http.RoundTripper
}

func (c *countRequests) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path == c.path {
		c.n.Add(1)
	}
	return c.next.RoundTrip(r)
}

// clusterClient is a client of addrs with the conformance AttemptTimeout
// and then mod, closed when the test ends.
func clusterClient(t *testing.T, addrs []string, mod func(*client.Config)) *client.Client {
	t.Helper()
	cfg := client.Config{Addrs: addrs, AttemptTimeout: conformanceAttemptTimeout}
	if mod != nil {
		mod(&cfg)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// chunkedClient is a client whose waits go in chunks of 200 ms, and
// which counts its requests to path.
func chunkedClient(t *testing.T, addrs []string, path string) (*client.Client, *countRequests) {
	t.Helper()
	counted := &countRequests{path: path, next: http.DefaultTransport.(*http.Transport).Clone()}
	return clusterClient(t, addrs, func(cfg *client.Config) {
		cfg.WaitChunk, cfg.HTTPClient = 200*time.Millisecond, &http.Client{Transport: counted}
	}), counted
}

// holding has a client take key, and returns it and a count of the
// key's waiters.
func holding(ctx context.Context, t *testing.T, addrs []string, key string) (*client.Client, func() int) {
	t.Helper()
	holder := clusterClient(t, addrs, nil)
	if _, ok, err := driverstest.Take(ctx, holder, key, "holder", time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	return holder, func() int {
		l, _, _ := holder.Get(ctx, key)
		return l.Waiters
	}
}

// A wait longer than one chunk keeps its place in the queue from chunk to
// chunk, on a real cluster: a waiter that queued first is served first,
// however many chunks its wait took, beside a later waiter whose one
// chunk spans the whole wait. Without the kept place, the first waiter
// joined the queue again at its end with every chunk, behind the later
// one, which was then served first.
func TestAcquireWait_KeepsItsPlaceFromChunkToChunk(t *testing.T) {
	addrs, _ := startCluster(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	holder, waiters := holding(ctx, t, addrs, "k")
	first, counted := chunkedClient(t, addrs, api.PathAcquire)
	later := clusterClient(t, addrs, nil)

	type answer struct {
		who string
		err error
	}
	answers := make(chan answer, 2)
	wait := func(c *client.Client, owner string) {
		_, err := driverstest.TakeWait(ctx, c, "k", owner, time.Minute, drivers.WaitOptions{})
		answers <- answer{owner, err}
	}
	go wait(first, "first")
	poll.Until(t, 10*time.Second, "the first waiter to queue", func() bool { return waiters() == 1 })
	go wait(later, "later")
	poll.Until(t, 10*time.Second, "the later waiter to queue", func() bool { return waiters() == 2 })
	sent := counted.n.Load()
	poll.Until(t, 20*time.Second, "three more chunks of the first waiter", func() bool { return counted.n.Load() >= sent+3 })

	if _, err := holder.Release(ctx, "k", "holder"); err != nil {
		t.Fatal(err)
	}
	a := <-answers
	if a.err != nil || a.who != "first" {
		t.Fatalf("after the release, %s answered first (%v); want the waiter that queued first", a.who, a.err)
	}
	if _, err := first.Release(ctx, "k", "first"); err != nil {
		t.Fatal(err)
	}
	if a := <-answers; a.err != nil || a.who != "later" {
		t.Fatalf("then %s answered %v; want the later waiter granted", a.who, a.err)
	}
	_, _ = later.Release(ctx, "k", "later")
}

// The same for a set: an acquire-all that waits in chunks keeps its place
// on the busy key, and the key it took, from chunk to chunk, and is served
// before a later single-key waiter.
func TestAcquireAllWait_KeepsItsPlaceFromChunkToChunk(t *testing.T) {
	addrs, _ := startCluster(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	holder, waiters := holding(ctx, t, addrs, "a")
	set, counted := chunkedClient(t, addrs, api.PathAcquire)
	later := clusterClient(t, addrs, nil)

	answers := make(chan string, 2)
	go func() {
		if _, err := driverstest.TakeAllWait(ctx, set, []string{"b", "a"}, "set", time.Minute, drivers.WaitOptions{}); err != nil {
			t.Errorf("AcquireAllWait = %v", err)
		}
		answers <- "set"
	}()
	poll.Until(t, 10*time.Second, "the set to queue for a", func() bool { return waiters() == 1 })
	go func() {
		if _, err := driverstest.TakeWait(ctx, later, "a", "later", time.Minute, drivers.WaitOptions{}); err != nil {
			t.Errorf("AcquireWait = %v", err)
		}
		answers <- "later"
	}()
	poll.Until(t, 10*time.Second, "the later waiter to queue", func() bool { return waiters() == 2 })
	sent := counted.n.Load()
	poll.Until(t, 20*time.Second, "three more chunks of the set", func() bool { return counted.n.Load() >= sent+3 })

	if _, err := holder.Release(ctx, "a", "holder"); err != nil {
		t.Fatal(err)
	}
	if who := <-answers; who != "set" {
		t.Fatalf("after the release, %s was served first; want the set, which queued first", who)
	}
	for _, k := range []string{"a", "b"} {
		if _, err := set.Release(ctx, k, "set"); err != nil {
			t.Fatal(err)
		}
	}
	if who := <-answers; who != "later" {
		t.Fatalf("then %s answered; want the later waiter", who)
	}
	_, _ = later.Release(ctx, "a", "later")
}
