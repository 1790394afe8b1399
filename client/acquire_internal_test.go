package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// A wait in chunks against a fake node: what each chunk asks of it, and
// what an abandoned wait leaves behind.

// Every chunk of a wait but the last asks the node to keep its place;
// the last, cut short by the caller's deadline, gives it up with its
// answer.
func TestAcquireWait_EveryChunkButTheLastKeepsItsPlace(t *testing.T) {
	n, c := fakeClient(t, Config{WaitChunk: 100 * time.Millisecond})
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

// A wait of an owner that will ask again (an election's candidate, a
// WithOwner lock) leaves a grant it may have been made as it gave up to
// the TTL: a release sent for it in the background can reach the node
// after the same owner's next grant, and a release is guarded by the owner
// alone, so it would free that grant. The node here holds every release
// until the owner has been granted the key again.
func TestAcquireWait_AReusedOwnersAbandonedWaitSendsNoLateRelease(t *testing.T) {
	for _, tc := range []struct {
		name string
		wait func(c *Client, ctx context.Context, opts drivers.WaitOptions) error
	}{
		{"mutex", func(c *Client, ctx context.Context, opts drivers.WaitOptions) error {
			_, err := driverstest.TakeWait(ctx, c, "k", "candidate", time.Minute, opts)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, c := fakeClient(t, Config{})
			if _, ok, err := driverstest.Take(t.Context(), c, "k", "leader", time.Minute); !ok || err != nil {
				t.Fatal("setup acquire:", ok, err)
			}
			gate := make(chan struct{})
			n.releaseGate.Store(&gate)
			n.holdAcquires.Store(true) // the node has the wait when ctx ends

			ctx, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
			defer cancel()
			if err := tc.wait(c, ctx, drivers.WaitOptions{OwnerReused: true}); err == nil {
				t.Fatal("the wait was granted a held key")
			}
			// Give a background release the time to reach the node.
			sent := poll.Wait(time.Second, func() bool { return n.hitCount("/v1/release") > 0 })

			// The leader goes; the candidate asks again and leads.
			n.holdAcquires.Store(false)
			n.mu.Lock()
			delete(n.locks, "k")
			n.freed()
			n.mu.Unlock()
			if _, ok, err := driverstest.Take(t.Context(), c, "k", "candidate", time.Minute); !ok || err != nil {
				t.Fatal("the candidate's next acquire:", ok, err)
			}
			close(gate)
			_ = c.Close() // waits for the client's background work
			n.mu.Lock()
			l := n.held("k")
			n.mu.Unlock()
			if l == nil || l.owner != "candidate" {
				t.Fatalf("after the abandoned wait's clean-up the key is held by %v (a release sent: %v); want the candidate's new grant kept", l, sent)
			}
			if sent {
				t.Fatal("a release was sent for a reused owner's abandoned wait")
			}
		})
	}
}

// An owner that nobody reuses still has its abandoned grant released in
// the background, so the key does not stay blocked for a TTL.
func TestAcquireWait_AFreshOwnersAbandonedWaitIsReleased(t *testing.T) {
	n, c := fakeClient(t, Config{})
	if _, ok, err := driverstest.Take(t.Context(), c, "k", "holder", time.Minute); !ok || err != nil {
		t.Fatal("setup acquire:", ok, err)
	}
	n.holdAcquires.Store(true) // the node has the wait when ctx ends
	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
	defer cancel()
	if _, err := driverstest.TakeWait(ctx, c, "k", "once", time.Minute, drivers.WaitOptions{}); err == nil {
		t.Fatal("the wait was granted a held key")
	}
	poll.Until(t, 5*time.Second, "the abandoned wait's release", func() bool { return n.hitCount("/v1/release") > 0 })
}

// A wait whose last attempt is a plain acquire (too little time left to
// queue) ends with the holder and its time left as that attempt found
// them, not with a bare 409 in place of the one before it.
func TestAcquireWait_ALastPlainAttemptKeepsTheHolder(t *testing.T) {
	n := newFakeNode(t, "")
	// Chunks shorter than the 2 ms a queued wait needs: every attempt of
	// this wait is a plain acquire.
	c := newTestClient(t, Config{Addrs: []string{n.addr()}, WaitChunk: time.Millisecond})
	const holder = "0123456789abcdef0123456789abcdef:deploy@host-3"
	if _, ok, err := driverstest.Take(t.Context(), c, "k", holder, time.Minute); !ok || err != nil {
		t.Fatal("setup acquire:", ok, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err := driverstest.TakeWait(ctx, c, "k", "waiter", time.Minute, drivers.WaitOptions{})
	na, ok := errors.AsType[*drivers.NotAcquiredError](err)
	if want := drivers.HolderOf(holder); !ok || na.Holder != want || na.HolderTTL < 30*time.Second {
		t.Fatalf("AcquireWait = %v (%+v); want the key held by %s, with its time left", err, na, want)
	}
}
