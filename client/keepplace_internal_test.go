package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
)

// Every chunk of a wait but the last asks the node to keep its place;
// the last, cut short by the caller's deadline, gives it up with its
// answer.
func TestAcquireWait_EveryChunkButTheLastKeepsItsPlace(t *testing.T) {
	n := newFakeNode(t, "")
	c := newTestClient(t, Config{Addrs: []string{n.addr()}, WaitChunk: 100 * time.Millisecond})
	if _, ok, _ := driverstest.Take(t.Context(), c, "k", "holder", time.Minute); !ok {
		t.Fatal("setup acquire failed")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 450*time.Millisecond)
	defer cancel()
	_, err := driverstest.TakeWait(ctx, c, "k", "waiter", time.Minute, drivers.WaitOptions{})
	if !errors.Is(err, drivers.ErrNotAcquired) {
		t.Fatalf("AcquireWait = %v; want the key held", err)
	}
	waits, keeps := n.waitsSent()
	if len(keeps) < 3 {
		t.Fatalf("%d chunks (wait_ms %v); want 3 or more of a 450 ms wait in chunks of 100 ms", len(keeps), waits)
	}
	last := len(keeps) - 1
	for i, k := range keeps {
		switch {
		case waits[i] == 100 && k != KeepPlace.Milliseconds():
			t.Errorf("chunk %d of %v (wait_ms %d) kept its place for %d ms; want %v", i, waits, waits[i], k, KeepPlace)
		case waits[i] < 100 && k != 0:
			t.Errorf("chunk %d of %v, cut short by the deadline (wait_ms %d), asks to keep its place (%d ms)", i, waits, waits[i], k)
		}
	}
	if keeps[last] != 0 {
		t.Errorf("the last chunk (wait_ms %d) asks to keep its place (%d ms)", waits[last], keeps[last])
	}
}

// A node of a release without keep_ms refuses the field; the wait goes
// on without it, and is answered as the wait it is.
func TestAcquireWait_ANodeThatRefusesKeepIsWaitedOnWithout(t *testing.T) {
	n := newFakeNode(t, "")
	n.noKeep.Store(true)
	c := newTestClient(t, Config{Addrs: []string{n.addr()}, WaitChunk: 100 * time.Millisecond})
	if _, ok, _ := driverstest.Take(t.Context(), c, "k", "holder", time.Minute); !ok {
		t.Fatal("setup acquire failed")
	}
	for range 2 { // the second wait sends no keep_ms at all
		ctx, cancel := context.WithTimeout(t.Context(), 350*time.Millisecond)
		_, err := driverstest.TakeWait(ctx, c, "k", "waiter", time.Minute, drivers.WaitOptions{})
		cancel()
		if !errors.Is(err, drivers.ErrNotAcquired) || errors.Is(err, drivers.ErrInvalid) {
			t.Fatalf("AcquireWait = %v; want the key held", err)
		}
	}
	_, keeps := n.waitsSent()
	withKeep := 0
	for _, k := range keeps {
		if k != 0 {
			withKeep++
		}
	}
	if withKeep != 1 || keeps[0] == 0 {
		t.Fatalf("keep_ms of the chunks sent: %v; want only the first to ask, once refused not again for a while", keeps)
	}

	// Once keepRetry has passed (the upgrade done), chunks ask again.
	n.noKeep.Store(false)
	c.keepRefused.Store(time.Now().Add(-keepRetry).UnixNano())
	ctx, cancel := context.WithTimeout(t.Context(), 350*time.Millisecond)
	defer cancel()
	if _, err := driverstest.TakeWait(ctx, c, "k", "waiter", time.Minute, drivers.WaitOptions{}); !errors.Is(err, drivers.ErrNotAcquired) {
		t.Fatalf("AcquireWait after keepRetry = %v; want the key held", err)
	}
	if _, again := n.waitsSent(); again[len(keeps)] != KeepPlace.Milliseconds() {
		t.Fatalf("keep_ms of the chunks sent: %v; want the first after keepRetry to ask again", again)
	}
}
