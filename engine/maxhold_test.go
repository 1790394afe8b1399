package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
	"time"

	"github.com/zerotal/lock/internal/testkit/poll"
)

func acqCap(key, owner string, ttl, maxHold time.Duration, now int64, wait bool) Command {
	return Command{Op: OpAcquireKeys, Keys: []string{key}, Owner: owner, TTL: ttl, Now: now, MaxHold: maxHold, Wait: wait}
}

// A replicated grant's cap counts from the entry's time; no refresh passes
// it, a refresh asking another cap keeps it, the grant is due at it and
// hands the key on, and the waiter's cap counts from that hand-off.
func TestMaxHold_ReplicatedCapsEveryRefresh(t *testing.T) {
	e := newReplicated(t, Config{})
	s := int64(time.Second)
	res := mustApply(t, e,
		acqCap("k", "x", 10*time.Second, 30*time.Second, t0, false),
		acqCap("k", "y", time.Minute, 20*time.Second, t0, true),
	)
	if !res[0].OK || res[0].Grant.Deadline != t0+10*s || !res[1].Queued {
		t.Fatalf("grant %s, wait %s", fmtResult(res[0]), fmtResult(res[1]))
	}
	fence := res[0].Grant.Fence
	res = mustApply(t, e,
		Command{Op: OpExtend, Key: "k", Owner: "x", TTL: time.Minute, Now: t0 + 9*s},
		acqCap("k", "x", time.Minute, time.Hour, t0+10*s, false),
		acqCap("k", "x", time.Minute, 0, t0+11*s, false),
	)
	for i, r := range res {
		if !r.OK || r.Grant != grantOf("k", "x", fence, t0+30*s) {
			t.Fatalf("refresh %d: %s, want the deadline at the cap, t0+30s", i, fmtResult(r))
		}
	}
	if due, _ := e.Due(t.Context(), t0+30*s, 0); len(due) != 1 || due[0].Fence != fence {
		t.Fatalf("due at the cap: %v", due)
	}
	res = mustApply(t, e, Command{Op: OpExpire, Key: "k", Owner: "x", ExpectFence: fence, Now: t0 + 30*s})
	if !res[0].OK || len(res[0].Handoffs) != 1 || res[0].Handoffs[0].Deadline != t0+50*s {
		t.Fatalf("expiry at the cap: %s, want y handed the key with its cap from now, t0+50s", fmtResult(res[0]))
	}
	res = mustApply(t, e, Command{Op: OpExtend, Key: "k", Owner: "y", TTL: time.Hour, Now: t0 + 49*s})
	if !res[0].OK || res[0].Grant.Deadline != t0+50*s {
		t.Fatalf("y's refresh: %s, want its cap, t0+50s", fmtResult(res[0]))
	}
}

// A snapshot carries every grant's cap and every waiter's: written as
// version 3 while one has a cap, restored as it was, and a table whose
// caps are all gone writes the bytes it would have without them.
func TestMaxHold_SnapshotCarriesCaps(t *testing.T) {
	s := int64(time.Second)
	e := newReplicated(t, Config{})
	res := mustApply(t, e,
		acqCap("k", "x", 10*time.Second, 30*time.Second, t0, false),
		acqCap("k", "y", time.Minute, 20*time.Second, t0, true),
		acqCap("k", "z", time.Minute, 0, t0, true),
		acqCap("p", "x", 10*time.Second, 0, t0, false),
		Command{Op: OpAcquireKeys, Keys: []string{"s"}, Owner: "x", TTL: time.Minute, Now: t0, MaxHold: 5 * time.Second, Claim: Claim{Kind: Semaphore, Limit: 2}},
	)
	snap, err := e.Snapshot(t.Context())
	if err != nil || snap[len(snapMagic)] != 3 {
		t.Fatalf("snapshot %x, %v; want version 3", snap, err)
	}
	n := newReplicated(t, Config{})
	if err := n.Restore(t.Context(), snap); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if again, _ := n.Snapshot(t.Context()); !bytes.Equal(again, snap) {
		t.Fatalf("restored and taken again:\n%x\nwant\n%x", again, snap)
	}
	fence := res[0].Grant.Fence
	got := mustApply(t, n,
		Command{Op: OpExtend, Key: "k", Owner: "x", TTL: time.Minute, Now: t0 + s},
		Command{Op: OpExtend, Key: "s", Owner: "x", TTL: time.Minute, Now: t0 + s},
		Command{Op: OpRelease, Key: "k", Owner: "x", Now: t0 + 2*s},
	)
	switch {
	case got[0].Grant != grantOf("k", "x", fence, t0+30*s):
		t.Fatalf("restored grant's refresh: %s, want its cap kept, t0+30s", fmtResult(got[0]))
	case got[1].Grant.Deadline != t0+5*s:
		t.Fatalf("restored semaphore slot's refresh: %s, want its cap kept, t0+5s", fmtResult(got[1]))
	case len(got[2].Handoffs) != 1 || got[2].Handoffs[0].Deadline != t0+22*s:
		t.Fatalf("restored waiter's hand-off: %s, want its cap of 20s from now, t0+22s", fmtResult(got[2]))
	}
	mustApply(t, n,
		Command{Op: OpForceRelease, Key: "k", Now: t0 + 3*s},
		Command{Op: OpForceRelease, Key: "k", Now: t0 + 3*s},
		Command{Op: OpRelease, Key: "s", Owner: "x", Now: t0 + 3*s},
	)
	if now, _ := n.Snapshot(t.Context()); now[len(snapMagic)] != 1 {
		t.Fatalf("a table whose caps are gone: version %d, want 1", now[len(snapMagic)])
	}
}

// A live wait for several keys holds the keys it took with no deadline
// until its last comes; its cap starts then, with its TTL, on every key.
func TestMaxHold_SetWaitCapStartsWhenComplete(t *testing.T) {
	e, clock := newLive(t, Config{})
	ctx := t.Context()
	mustAcquireOne(t, e, "y", "a", time.Minute)
	out := make(chan error, 1)
	go func() {
		_, _, err := e.Acquire(ctx, AcquireRequest{Keys: []string{"x", "y"}, Owner: "b", TTL: time.Minute, MaxHold: 5 * time.Second, Wait: true}, nil)
		out <- err
	}()
	poll.Until(t, 5*time.Second, "b queued for y", func() bool { return waiters(t, e, "y") == 1 })
	clock.Advance(10 * time.Second)
	if ok, err := e.Release(ctx, "y", "a"); !ok || err != nil {
		t.Fatalf("Release: %v %v", ok, err)
	}
	if err := <-out; err != nil {
		t.Fatalf("the set's wait: %v", err)
	}
	for _, k := range []string{"x", "y"} {
		in, ok, err := e.Get(ctx, k)
		if err != nil || !ok || in.Owner != "b" || in.Deadline != clock.Now().Add(5*time.Second).UnixNano() {
			t.Fatalf("%s: %+v %v %v; want b's with its cap of 5s from the set's completion", k, in.Grant, ok, err)
		}
	}
}

// A version 3 snapshot whose waiter cap names no waiter is refused.
func TestMaxHold_SnapshotRefusesTheCapOfNoWaiter(t *testing.T) {
	b := seedCappedSnapshot()
	body := bytes.Clone(b[:len(b)-snapTrailer])
	i := bytes.LastIndexByte(body, 'z') // the waiter's owner in the caps, after its place in the queue
	body[i] = 'q'
	if _, err := decodeTable(binary.BigEndian.AppendUint32(body, crc32.ChecksumIEEE(body))); !errors.Is(err, errCorrupt) {
		t.Fatalf("decode = %v, want a corrupt-snapshot error", err)
	}
	if _, err := decodeTable(b); err != nil {
		t.Fatalf("the unedited snapshot: %v", err)
	}
}
