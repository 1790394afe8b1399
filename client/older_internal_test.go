package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
)

// A node of v0.1.0 serves one key's mutex only: it refuses keys,
// semaphore and mode as unknown fields (400), which the client reports as
// unsupported, having taken nothing, whether the request waits or not
// (a wait's keep_ms, refused first, is dropped as before). One key's
// mutex it serves, at once and waiting.
func TestAcquire_AnOlderNodeIsUnsupportedForWhatItDoesNotKnow(t *testing.T) {
	n := newFakeNode(t, "")
	n.v010.Store(true)
	c := newTestClient(t, Config{Addrs: []string{n.addr()}, WaitChunk: 100 * time.Millisecond})
	sem := drivers.Claim{Kind: drivers.Semaphore, Limit: 2}
	read := drivers.Claim{Kind: drivers.RWLock}
	for _, tc := range []struct {
		name string
		req  drivers.Request
	}{
		{"a set", drivers.Request{Keys: []string{"a", "b"}}},
		{"a set, waiting", drivers.Request{Keys: []string{"a", "b"}, Wait: true}},
		{"a semaphore", drivers.Request{Keys: []string{"s"}, Claim: sem}},
		{"a read lock, waiting", drivers.Request{Keys: []string{"r"}, Claim: read, Wait: true}},
	} {
		tc.req.Owner, tc.req.TTL = "o", time.Minute
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		g, err := c.Acquire(ctx, tc.req)
		cancel()
		if !errors.Is(err, drivers.ErrUnsupported) || g.Acquired {
			t.Errorf("%s on a node of v0.1.0: %+v, %v; want an error matching ErrUnsupported", tc.name, g, err)
		}
	}
	n.mu.Lock()
	taken := len(n.locks)
	n.mu.Unlock()
	if taken != 0 {
		t.Fatalf("the refused requests took %d keys", taken)
	}
	for _, wait := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		g, err := c.Acquire(ctx, drivers.Request{Keys: []string{"m"}, Owner: "o", TTL: time.Minute, Wait: wait})
		cancel()
		if err != nil || !g.Acquired || g.Fence() == 0 {
			t.Fatalf("one key's mutex (wait %v) on a node of v0.1.0: %+v, %v", wait, g, err)
		}
	}
}
