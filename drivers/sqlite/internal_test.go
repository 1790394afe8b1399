package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/internal/testkit/poll"
)

func TestJitter_StaysWithinHalfAndWhole(t *testing.T) {
	for _, d := range []time.Duration{0, 1, 2, 3, time.Microsecond, 250 * time.Microsecond, time.Second} {
		for range 200 {
			if j := jitter(d); j < d/2 || j > d {
				t.Fatalf("jitter(%v) = %v, want within [%v, %v]", d, j, d/2, d)
			}
		}
	}
}

func TestWatcher_BumpWakesOnlyHandedOutChannels(t *testing.T) {
	w := newWatcher(minPoll, DefaultPollInterval)
	first := w.next()
	w.bump()
	select {
	case <-first:
	default:
		t.Fatal("bump did not close the channel handed out")
	}
	second := w.next()
	if second == first {
		t.Fatal("next after a bump returned the closed channel")
	}
	w.bump()
	w.bump() // nobody took the new channel: nothing to close, no panic
	w.stop()
}

func openInternal(t *testing.T, cfg Config) *Driver {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = filepath.Join(t.TempDir(), "locks.db")
	}
	d, err := Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// waiters is how many wait for key, in the file.
func waiters(t *testing.T, d *Driver, key string) int {
	h, _, err := d.Inspect(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	return h.WaiterCount
}

func TestDriver_WaitersOfOneHandleAreServedInArrivalOrder(t *testing.T) {
	d := openInternal(t, Config{})
	ctx := t.Context()
	if _, ok, err := driverstest.Take(ctx, d, "k", "holder", time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	const n = 4
	order := make(chan int, n)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			owner := "waiter-" + string(rune('a'+i))
			if _, err := driverstest.TakeWait(ctx, d, "k", owner, time.Minute, drivers.WaitOptions{RetryDelay: 10 * time.Millisecond}); err != nil {
				errs <- err
				return
			}
			order <- i
			_, err := d.Release(ctx, "k", owner)
			errs <- err
		}()
		// Let waiter i line up before waiter i+1 arrives.
		if !poll.Wait(10*time.Second, func() bool { return waiters(t, d, "k") == i+1 }) {
			t.Fatalf("waiter %d never lined up", i)
		}
	}
	if _, err := d.Release(ctx, "k", "holder"); err != nil {
		t.Fatal(err)
	}
	for want := range n {
		select {
		case got := <-order:
			if got != want {
				t.Fatalf("grant %d went to waiter %d, want arrival order", want, got)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("grant %d never came", want)
		}
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func TestDriver_PollerStopsWhenIdleAndOnClose(t *testing.T) {
	d := openInternal(t, Config{})
	ctx := t.Context()
	if _, ok, err := driverstest.Take(ctx, d, "k", "holder", 50*time.Millisecond); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if _, err := driverstest.TakeWait(ctx, d, "k", "waiter", time.Minute, drivers.WaitOptions{}); err != nil {
		t.Fatal(err)
	}
	running := func() bool {
		d.watch.mu.Lock()
		defer d.watch.mu.Unlock()
		return d.watch.running
	}
	if !running() {
		t.Fatal("no poller after a wait")
	}
	if !poll.Wait(10*time.Second, func() bool { return !running() }) {
		t.Fatal("poller still running long after the last waiter left")
	}
	// A new wait (for a busy key: a free one is taken at once) restarts
	// it; Close stops it (goleak checks the goroutine).
	if _, ok, err := driverstest.Take(ctx, d, "k2", "holder", 50*time.Millisecond); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if _, err := driverstest.TakeWait(ctx, d, "k2", "waiter", time.Minute, drivers.WaitOptions{}); err != nil {
		t.Fatal(err)
	}
	if !running() {
		t.Fatal("poller not restarted by a new wait")
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if running() {
		t.Fatal("poller running after Close")
	}
}

func TestDriver_AbandonedWriteIsReleased(t *testing.T) {
	d := openInternal(t, Config{})
	ctx, cancel := context.WithCancel(t.Context())
	if _, ok, err := driverstest.Take(t.Context(), d, "k", "owner", time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	cancel()
	// As if the grant had been written when ctx ended mid-statement.
	d.abandon(ctx, "k", "owner")
	if held, err := d.Exists(t.Context(), "k"); err != nil || held {
		t.Fatalf("Exists after abandon = %v, %v; want false", held, err)
	}
}

func TestDriver_CloseWakesWaiters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locks.db")
	holder := openInternal(t, Config{Path: path})
	d, err := Open(t.Context(), Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := driverstest.Take(t.Context(), holder, "k", "holder", time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	done := make(chan error, 2)
	for _, owner := range []string{"first", "second"} { // one polling, one lined up behind it
		go func() {
			_, err := driverstest.TakeWait(context.Background(), d, "k", owner, time.Minute, drivers.WaitOptions{RetryDelay: time.Second})
			done <- err
		}()
	}
	if !poll.Wait(10*time.Second, func() bool { return waiters(t, d, "k") == 2 }) {
		t.Fatal("waiters never lined up")
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case err := <-done:
			if !errors.Is(err, drivers.ErrClosed) {
				t.Fatalf("AcquireWait after Close = %v, want ErrClosed", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a waiter was still blocked 5s after Close")
		}
	}
	if held, err := holder.Exists(t.Context(), "k"); err != nil || !held {
		t.Fatalf("the other handle's lock after Close = %v, %v", held, err)
	}
}

func TestOpen_DurableSyncsEveryCommit(t *testing.T) {
	for _, tc := range []struct {
		durable bool
		want    int // PRAGMA synchronous: 1 NORMAL, 2 FULL
	}{{false, 1}, {true, 2}} {
		d := openInternal(t, Config{Durable: tc.durable})
		var got int
		if err := d.wconn.QueryRowContext(t.Context(), `PRAGMA synchronous`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Fatalf("Durable=%v: synchronous = %d, want %d", tc.durable, got, tc.want)
		}
		if _, ok, err := driverstest.Take(t.Context(), d, "k", "o", time.Minute); err != nil || !ok {
			t.Fatalf("Durable=%v: Acquire = %v, %v", tc.durable, ok, err)
		}
	}
}
