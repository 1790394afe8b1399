package engine

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
)

func newReplicated(t *testing.T, cfg Config) *Replicated {
	t.Helper()
	e, err := NewReplicated(cfg)
	if err != nil {
		t.Fatalf("NewReplicated: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func mustApply(t *testing.T, e *Replicated, cmds ...Command) []Result {
	t.Helper()
	res, err := e.Apply(t.Context(), cmds)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if len(res) != len(cmds) {
		t.Fatalf("Apply returned %d results for %d commands", len(res), len(cmds))
	}
	return res
}

func TestEngine_ReplicatedBatchUsesRaftIndexAsFence(t *testing.T) {
	e := newReplicated(t, Config{})
	res := mustApply(t, e,
		Command{Op: OpAcquire, Key: "a", Owner: "x", TTL: time.Second, Now: t0, Fence: 10},
		Command{Op: OpAcquire, Key: "b", Owner: "x", TTL: time.Second, Now: t0, Fence: 10},
		Command{Op: OpAcquire, Key: "a", Owner: "y", TTL: time.Second, Now: t0, Fence: 11, Wait: true},
	)
	if !res[0].OK || res[0].Grant.Fence != 10 {
		t.Fatalf("first grant = %+v", res[0])
	}
	if !res[1].OK || res[1].Grant.Fence != 11 {
		t.Fatalf("second grant in the same entry = %+v", res[1])
	}
	if res[2].OK || !res[2].Queued || res[2].Grant.Owner != "x" {
		t.Fatalf("queued = %+v", res[2])
	}
	res = mustApply(t, e, Command{Op: OpRelease, Key: "a", Owner: "x", Now: t0 + 5, Fence: 12})
	if !res[0].OK || len(res[0].Handoffs) != 1 || res[0].Handoffs[0] != grantOf("a", "y", 12, t0+5+int64(time.Second)) {
		t.Fatalf("hand-off = %s", fmtResult(res[0]))
	}
	info, ok, err := e.Get(t.Context(), "a")
	if err != nil || !ok || info.Owner != "y" || info.Waiters != 0 {
		t.Fatalf("Get = %+v %v %v", info, ok, err)
	}
}

func TestEngine_ReplicatedNothingExpiresWithoutCommand(t *testing.T) {
	e := newReplicated(t, Config{})
	ctx := t.Context()
	mustApply(t, e, acq("k", "a", 100, t0))
	mustApply(t, e, Command{Op: OpTick, Now: t0 + 1000})
	info, ok, err := e.Get(ctx, "k")
	if err != nil || !ok || info.Deadline != t0+100 {
		t.Fatalf("an overdue grant must still be reported: %+v %v %v", info, ok, err)
	}
	due, err := e.Due(ctx, t0+1000, 10)
	if err != nil || len(due) != 1 || due[0] != grantOf("k", "a", 1, t0+100) {
		t.Fatalf("Due = %+v %v", due, err)
	}
	if d, ok, err := e.NextDeadline(ctx); err != nil || !ok || d != t0+100 {
		t.Fatalf("NextDeadline = %d %v %v", d, ok, err)
	}
	// A stale expiry (wrong fence) is a no-op; the right one ends it.
	res := mustApply(t, e,
		Command{Op: OpExpire, Key: "k", Owner: "a", ExpectFence: 2, Now: t0 + 1000},
		Command{Op: OpExpire, Key: "k", Owner: "a", ExpectFence: 1, Now: t0 + 1000},
	)
	if res[0].OK || !res[1].OK {
		t.Fatalf("expire results = %+v", res)
	}
	if n := e.Len(); n != 0 {
		t.Fatalf("Len = %d after expiry", n)
	}
	if _, ok, err := e.NextDeadline(ctx); err != nil || ok {
		t.Fatalf("NextDeadline on an empty table = %v %v", ok, err)
	}
}

// A paused former leader proposes an expiry computed from old deadlines;
// the lock was refreshed meanwhile, so the expiry must not apply.
func TestEngine_ReplicatedStaleExpiryAfterRefreshIsNoOp(t *testing.T) {
	e := newReplicated(t, Config{})
	mustApply(t, e, acq("k", "a", 100, t0))
	mustApply(t, e, acq("k", "a", 100, t0+90)) // refresh: same fence, deadline t0+190
	res := mustApply(t, e, Command{Op: OpExpire, Key: "k", Owner: "a", ExpectFence: 1, Now: t0 + 120})
	if res[0].OK {
		t.Fatal("stale expiry applied")
	}
	info, ok, _ := e.Get(t.Context(), "k")
	if !ok || info.Deadline != t0+190 || info.Fence != 1 {
		t.Fatalf("k = %+v %v", info, ok)
	}
}

func TestEngine_ConfigChecks(t *testing.T) {
	if _, err := New(Config{MaxKeys: -2}); !errors.Is(err, drivers.ErrInvalid) {
		t.Fatalf("New with MaxKeys -2: %v", err)
	}
	if _, err := New(Config{MaxWaitersPerKey: -2}); !errors.Is(err, drivers.ErrInvalid) {
		t.Fatalf("New with MaxWaitersPerKey -2: %v", err)
	}
	if _, err := NewReplicated(Config{MaxKeys: -2}); !errors.Is(err, drivers.ErrInvalid) {
		t.Fatalf("NewReplicated with MaxKeys -2: %v", err)
	}
}

func TestEngine_ReplicatedPerCommandErrorsDoNotFailBatch(t *testing.T) {
	e := newReplicated(t, Config{MaxKeys: 1})
	res := mustApply(t, e, acq("a", "o", 10, t0), acq("b", "o", 10, t0), rel("a", "o", t0))
	if !res[0].OK || !errors.Is(res[1].Err, drivers.ErrFull) || !res[2].OK {
		t.Fatalf("results = %s / %s / %s", fmtResult(res[0]), fmtResult(res[1]), fmtResult(res[2]))
	}
	if res[1].Err.Error() != "engine: key limit 1 reached: lock: limit reached" {
		t.Fatalf("message = %q", res[1].Err)
	}
}

func TestEngine_ApplyAfterCloseIsErrClosed(t *testing.T) {
	e, err := NewReplicated(Config{})
	if err != nil {
		t.Fatal(err)
	}
	_ = e.Close()
	if _, err := e.Apply(t.Context(), []Command{{Op: OpTick, Now: 1}}); !errors.Is(err, drivers.ErrClosed) {
		t.Fatalf("Apply after Close: %v", err)
	}
	if _, err := e.Snapshot(t.Context()); !errors.Is(err, drivers.ErrClosed) {
		t.Fatalf("Snapshot after Close: %v", err)
	}
}

// Two engines fed the same commands in different batchings end up with
// byte-identical snapshots, and a third restored from the snapshot answers
// the next commands exactly as they do.
func TestEngine_SnapshotDeterministicAndRoundTrip(t *testing.T) {
	cmds := []Command{
		{Op: OpAcquire, Key: "b", Owner: "x", TTL: 100, Now: t0, Fence: 3},
		{Op: OpAcquire, Key: "a", Owner: "y", TTL: 50, Now: t0 + 1, Fence: 4},
		{Op: OpAcquire, Key: "a", Owner: "z", TTL: 70, Now: t0 + 2, Fence: 5, Wait: true},
		{Op: OpAcquire, Key: "a", Owner: "w", TTL: 80, Now: t0 + 2, Fence: 5, Wait: true},
		{Op: OpAcquire, Key: "c", Owner: "x", TTL: 10, Now: t0 + 3, Fence: 6},
		{Op: OpRelease, Key: "c", Owner: "x", Now: t0 + 4, Fence: 7},
		{Op: OpTick, Now: t0 + 20},
	}
	one := newReplicated(t, Config{})
	two := newReplicated(t, Config{})
	mustApply(t, one, cmds...)
	for _, c := range cmds {
		mustApply(t, two, c)
	}
	s1, err := one.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	s2, err := two.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(s1, s2) {
		t.Fatalf("snapshots differ:\n%x\n%x", s1, s2)
	}
	three := newReplicated(t, Config{})
	mustApply(t, three, acq("junk", "j", 10, 5))
	if err := three.Restore(t.Context(), s1); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	s3, _ := three.Snapshot(t.Context())
	if !bytes.Equal(s1, s3) {
		t.Fatal("restored engine snapshots differently")
	}
	if _, ok, _ := three.Get(t.Context(), "junk"); ok {
		t.Fatal("Restore kept a key of the old table")
	}
	next := []Command{
		{Op: OpRelease, Key: "a", Owner: "y", Now: t0 + 30, Fence: 20},
		{Op: OpAcquire, Key: "d", Owner: "q", TTL: 5, Now: t0 + 30},
		{Op: OpExpire, Key: "b", Owner: "x", ExpectFence: 3, Now: t0 + 100},
	}
	r1 := mustApply(t, one, next...)
	r3 := mustApply(t, three, next...)
	for i := range r1 {
		if !sameResult(r1[i], r3[i]) {
			t.Fatalf("command %d: original %s, restored %s", i, fmtResult(r1[i]), fmtResult(r3[i]))
		}
	}
	if len(r1[0].Handoffs) != 1 || r1[0].Handoffs[0].Owner != "z" || r1[1].Grant.Fence != 21 {
		t.Fatalf("unexpected answers after restore: %s %s", fmtResult(r1[0]), fmtResult(r1[1]))
	}
}

func TestEngine_RestoreRejectsCorruptInputAndKeepsState(t *testing.T) {
	e := newReplicated(t, Config{})
	mustApply(t, e, acq("k", "a", 100, t0), acqWait("k", "b", 100, t0), acq("m", "c", 100, t0))
	good, err := e.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i] ^= 0x40
		return b
	}
	bad := map[string][]byte{
		"empty":       nil,
		"magic":       flip(0),
		"version":     flip(4),
		"body bit":    flip(len(good) / 2),
		"checksum":    flip(len(good) - 1),
		"truncated":   good[:len(good)-5],
		"half":        good[:len(good)/2],
		"extra bytes": append(bytes.Clone(good), 0),
	}
	for i := 1; i < len(good); i += 7 {
		bad[fmt.Sprint("prefix ", i)] = good[:i]
	}
	for name, b := range bad {
		if err := e.Restore(t.Context(), b); err == nil || !errors.Is(err, errCorrupt) {
			t.Errorf("%s: Restore = %v, want a corrupt-snapshot error", name, err)
		}
	}
	after, _ := e.Snapshot(t.Context())
	if !bytes.Equal(good, after) {
		t.Fatal("a failed Restore changed the state")
	}
}
