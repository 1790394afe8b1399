package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
)

// The client declares the cap on total hold time, which the node
// enforces, and sends it as max_hold_ms (rounded up to whole
// milliseconds, so the node's cap is never shorter than asked), waiting
// or not; a node too old to know the field refuses it as unknown (400),
// which the client reports as unsupported, having taken nothing.
func TestAcquire_SendsMaxHoldAndAnOlderNodeIsUnsupported(t *testing.T) {
	n := newFakeNode(t, "")
	c := newTestClient(t, Config{Addrs: []string{n.addr()}, WaitChunk: 100 * time.Millisecond})
	if !c.Capabilities().MaxHold {
		t.Fatal("the client does not declare Capabilities.MaxHold")
	}
	for _, wait := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		g, err := c.Acquire(ctx, drivers.Request{Keys: []string{"k"}, Owner: "o", TTL: time.Minute, MaxHold: 2500*time.Millisecond + 1, Wait: wait})
		cancel()
		if err != nil || !g.Acquired {
			t.Fatalf("a capped acquire (wait %v): %+v, %v", wait, g, err)
		}
		if got := n.maxHold.Load(); got != 2501 {
			t.Errorf("wait %v: max_hold_ms %d sent; want 2501", wait, got)
		}
	}

	old := newFakeNode(t, "")
	old.v010.Store(true)
	c = newTestClient(t, Config{Addrs: []string{old.addr()}, WaitChunk: 100 * time.Millisecond})
	for _, wait := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		g, err := c.Acquire(ctx, drivers.Request{Keys: []string{"c"}, Owner: "o", TTL: time.Minute, MaxHold: time.Minute, Wait: wait})
		cancel()
		if !errors.Is(err, drivers.ErrUnsupported) || g.Acquired {
			t.Errorf("a cap (wait %v) on a node of v0.1.0: %+v, %v; want an error matching ErrUnsupported", wait, g, err)
		}
	}
	old.mu.Lock()
	taken := len(old.locks)
	old.mu.Unlock()
	if taken != 0 {
		t.Fatalf("the refused requests took %d keys", taken)
	}
}
