package engine

import (
	"testing"
	"time"
)

// Changed is closed when the key changes hands: a grant, a release, an
// expiry; not when another key does, nor on a refresh.
func TestChanged_ClosedWhenTheKeyChangesHands(t *testing.T) {
	e, clock := newLive(t, Config{})
	ctx := t.Context()
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	step := func(what string, want bool, do func()) {
		t.Helper()
		ch, stop := e.Changed("k")
		defer stop()
		do()
		// A no-op read goes through the loop after do: the notice, if
		// any, has been given by then.
		if _, _, err := e.Get(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		if got := closed(ch); got != want {
			t.Fatalf("%s: changed %v, want %v", what, got, want)
		}
	}
	step("a grant", true, func() { _, _, _ = e.acquireOne(ctx, "k", "a", time.Second) })
	step("a refresh", false, func() { _, _, _ = e.acquireOne(ctx, "k", "a", time.Second) })
	step("another key", false, func() { _, _, _ = e.acquireOne(ctx, "other", "a", time.Second) })
	step("a release", true, func() { _, _ = e.Release(ctx, "k", "a") })
	_, _, _ = e.acquireOne(ctx, "k", "b", time.Second)
	step("an expiry", true, func() { clock.Advance(2 * time.Second) })
	// A restore replaces the table whole: any key may have changed hands,
	// and no grant or release tells of it one key at a time.
	snap, err := e.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, _, _ = e.acquireOne(ctx, "other", "c", time.Second)
	step("a restore", true, func() {
		if err := e.Restore(ctx, snap); err != nil {
			t.Fatal(err)
		}
	})
	if e.changes.Watched() {
		t.Fatal("keys still watched after every stop")
	}
}
