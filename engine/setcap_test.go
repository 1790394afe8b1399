package engine

import (
	"bytes"
	"testing"
	"time"
)

// A replicated wait for several keys that queues (the cluster's set
// wait) starts its cap when it completes, as its TTL does: the key it
// takes at once and the one handed to it later have their caps pending,
// kept so by the keep-alive (an acquire with CapPending) and through a
// snapshot, and started on every key by the closing refresh, from its
// time. A key the owner held before keeps its own cap.
func TestMaxHold_ReplicatedSetCapStartsWithItsClosingRefresh(t *testing.T) {
	s := int64(time.Second)
	set := func(keys []string, maxHold time.Duration, now int64, wait bool) Command {
		return Command{Op: OpAcquireKeys, Keys: keys, Owner: "s", TTL: time.Minute, Now: now, MaxHold: maxHold, Wait: wait}
	}
	e := newReplicated(t, Config{})
	res := mustApply(t, e,
		acqCap("y", "h", time.Hour, 0, t0, false),
		acqCap("p", "s", time.Hour, 50*time.Second, t0, false),
		set([]string{"x", "y", "p"}, 10*time.Second, t0, true),
	)
	x, p := res[2].Grants[0], res[2].Grants[2]
	if !res[2].Queued || x.Deadline != t0+60*s || p.Deadline != t0+50*s {
		t.Fatalf("the set's wait: %s; want x taken for its TTL, t0+60s (its cap pending), p kept at its own cap, t0+50s", fmtResult(res[2]))
	}

	snap, err := e.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	n := newReplicated(t, Config{})
	if err := n.Restore(t.Context(), snap); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if again, _ := n.Snapshot(t.Context()); !bytes.Equal(again, snap) {
		t.Fatalf("restored and taken again:\n%x\nwant\n%x", again, snap)
	}

	res = mustApply(t, n,
		set([]string{"x", "p"}, CapPending, t0+20*s, false),          // the keep-alive
		Command{Op: OpRelease, Key: "y", Owner: "h", Now: t0 + 30*s}, // y handed to the set
	)
	if g := res[0].Grants[0]; !res[0].OK || g != grantOf("x", "s", x.Fence, t0+80*s) {
		t.Fatalf("the keep-alive: %s; want x's grant at t0+80s, its cap still pending", fmtResult(res[0]))
	}
	if h := res[1].Handoffs; len(h) != 1 || h[0].Owner != "s" || h[0].Deadline != t0+90*s {
		t.Fatalf("y's hand-off: %s; want the set's grant for its TTL, t0+90s (its cap pending)", fmtResult(res[1]))
	}

	res = mustApply(t, n, set([]string{"x", "y", "p"}, 10*time.Second, t0+31*s, false)) // the closing refresh
	want := []int64{t0 + 41*s, t0 + 41*s, t0 + 50*s}
	for i, g := range res[0].Grants {
		if !res[0].OK || g.Deadline != want[i] {
			t.Fatalf("the closing refresh: %s; want x and y capped 10s from it (t0+41s), p at its own cap (t0+50s)", fmtResult(res[0]))
		}
	}
	res = mustApply(t, n,
		Command{Op: OpExtend, Key: "x", Owner: "s", TTL: time.Hour, Now: t0 + 32*s},
		set([]string{"x", "y"}, 20*time.Second, t0+33*s, false),
	)
	if res[0].Grant.Deadline != t0+41*s || res[1].Grants[1].Deadline != t0+41*s {
		t.Fatalf("later refreshes: %s, %s; want the caps kept, t0+41s", fmtResult(res[0]), fmtResult(res[1]))
	}
}
