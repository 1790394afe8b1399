package sqlite

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// A hot key's hand-off within one process: what it costs the handle.

// longWait keeps a waiter from visiting its place on a timer of its own
// while a test counts what the handle runs (it visits a third of a lease
// after its last visit, 1s).
var longWait = drivers.WaitOptions{RetryDelay: time.Minute}

// waitFor starts a wait of owner for key on d and returns where its fence
// or error comes.
func waitFor(ctx context.Context, d *Driver, key, owner string, o drivers.WaitOptions) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := driverstest.TakeWait(ctx, d, key, owner, time.Minute, o)
		done <- err
	}()
	return done
}

func within(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no answer after 10s", what)
	}
}

// A waiter let in by a release through its own handle is handed its grant
// by the releasing transaction: it does not read the key to learn it.
func TestDriver_HandOffWithinTheHandleNeedsNoRead(t *testing.T) {
	d := openInternal(t, Config{Path: MemoryPath}) // no other writer, no poller
	ctx := t.Context()
	if _, ok, err := driverstest.Take(ctx, d, "k", "holder", time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	done := waitFor(ctx, d, "k", "waiter", longWait)
	// Its place queued, the waiter reads the key once, then waits.
	if !poll.Wait(10*time.Second, func() bool { return d.reads.Load() >= 1 }) {
		t.Fatal("the waiter never read the key")
	}
	before := d.reads.Load()
	if ok, err := d.Release(ctx, "k", "holder"); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	within(t, done, "the waiter")
	if n := d.reads.Load() - before; n != 0 {
		t.Fatalf("the waiter let in by this handle's release read the key %d more time(s) to learn it; want its grant handed over", n)
	}
	h, held, err := d.Inspect(ctx, "k")
	if err != nil || !held || h.Holders[0].Owner != "waiter" {
		t.Fatalf("Inspect = %+v, %v, %v; want the waiter holding k", h, held, err)
	}
}

// A wait for a key with a queue queues behind it in one statement, not in
// a transaction of a read and a write; its turn still comes in order.
func TestDriver_WaitBehindAQueueIsOneStatement(t *testing.T) {
	d := openInternal(t, Config{})
	ctx := t.Context()
	if _, ok, err := driverstest.Take(ctx, d, "k", "holder", time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	first := waitFor(ctx, d, "k", "first", longWait)
	// The first waiter's step is a transaction: it may take the key.
	if !poll.Wait(10*time.Second, func() bool { return d.txs.Load() == 1 && waiters(t, d, "k") == 1 }) {
		t.Fatalf("the first waiter never queued (%d transactions)", d.txs.Load())
	}
	second := waitFor(ctx, d, "k", "second", longWait)
	if !poll.Wait(10*time.Second, func() bool { return waiters(t, d, "k") == 2 }) {
		t.Fatal("the second waiter never queued")
	}
	if n := d.txs.Load() - 1; n != 0 {
		t.Fatalf("the wait behind a queue ran %d transaction(s) to queue; want one statement", n)
	}
	if ok, err := d.Release(ctx, "k", "holder"); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	within(t, first, "the first waiter")
	select {
	case err := <-second:
		t.Fatalf("the second waiter was answered (%v) while the first holds the key", err)
	default:
	}
	if ok, err := d.Release(ctx, "k", "first"); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	within(t, second, "the second waiter")
}

// A wait queued behind another waiter of its handle, which ends before it
// has read the key, still names the holder in the way.
func TestDriver_WaitQueuedBehindNamesTheHolderWhenItEnds(t *testing.T) {
	d := openInternal(t, Config{})
	ctx := t.Context()
	if _, ok, err := driverstest.Take(ctx, d, "k", "holder", time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	first := waitFor(ctx, d, "k", "first", longWait)
	if !poll.Wait(10*time.Second, func() bool { return waiters(t, d, "k") == 1 }) {
		t.Fatal("the first waiter never queued")
	}
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err := driverstest.TakeWait(wctx, d, "k", "second", time.Minute, longWait)
	var na *drivers.NotAcquiredError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &na) || na.Holder != drivers.HolderOf("holder") || na.HolderTTL <= 0 {
		t.Fatalf("the wait ended with %v; want the deadline and the holder in the way", err)
	}
	if n := waiters(t, d, "k"); n != 1 {
		t.Fatalf("%d waiters after the second left; want the first alone", n)
	}
	if ok, err := d.Release(ctx, "k", "holder"); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	within(t, first, "the first waiter")
}
