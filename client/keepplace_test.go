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
	keepsItsPlace(t, "k", []string{"k"})
}

// The same for a set: an acquire-all that waits in chunks keeps its place
// on the busy key, and the key it took, from chunk to chunk, and is served
// before a later single-key waiter.
func TestAcquireAllWait_KeepsItsPlaceFromChunkToChunk(t *testing.T) {
	keepsItsPlace(t, "a", []string{"b", "a"})
}

// keepsItsPlace has a holder take busy, a first waiter in short chunks
// wait for keys (one key, or a set with busy in it), then a later
// one-chunk waiter wait for busy; once the first waiter has sent three
// more chunks, the holder's release must serve it first.
func keepsItsPlace(t *testing.T, busy string, keys []string) {
	t.Helper()
	addrs, _ := startCluster(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	holder, waiters := holding(ctx, t, addrs, busy)
	first, counted := chunkedClient(t, addrs, api.PathAcquire)
	later := clusterClient(t, addrs, nil)

	type answer struct {
		who string
		err error
	}
	answers := make(chan answer, 2)
	go func() {
		var err error
		if len(keys) == 1 {
			_, err = driverstest.TakeWait(ctx, first, busy, "first", time.Minute, drivers.WaitOptions{})
		} else {
			_, err = driverstest.TakeAllWait(ctx, first, keys, "first", time.Minute, drivers.WaitOptions{})
		}
		answers <- answer{"first", err}
	}()
	poll.Until(t, 10*time.Second, "the first waiter to queue", func() bool { return waiters() == 1 })
	go func() {
		_, err := driverstest.TakeWait(ctx, later, busy, "later", time.Minute, drivers.WaitOptions{})
		answers <- answer{"later", err}
	}()
	poll.Until(t, 10*time.Second, "the later waiter to queue", func() bool { return waiters() == 2 })
	sent := counted.n.Load()
	poll.Until(t, 20*time.Second, "three more chunks of the first waiter", func() bool { return counted.n.Load() >= sent+3 })

	if _, err := holder.Release(ctx, busy, "holder"); err != nil {
		t.Fatal(err)
	}
	a := <-answers
	if a.err != nil || a.who != "first" {
		t.Fatalf("after the release, %s answered first (%v); want the waiter that queued first", a.who, a.err)
	}
	for _, k := range keys {
		if _, err := first.Release(ctx, k, "first"); err != nil {
			t.Fatal(err)
		}
	}
	if a := <-answers; a.err != nil || a.who != "later" {
		t.Fatalf("then %s answered %v; want the later waiter granted", a.who, a.err)
	}
	_, _ = later.Release(ctx, busy, "later")
}
