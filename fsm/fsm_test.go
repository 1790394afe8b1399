package fsm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/goleak"

	"github.com/zerotal/lock/drivers"

	"github.com/zerotal/lock/engine"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const sec = int64(time.Second)

func newTestFSM(t *testing.T, cfg Config) *FSM {
	t.Helper()
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// logs turns entries into consecutive raft command logs from index first.
func logs(t *testing.T, first uint64, entries ...Entry) []*raft.Log {
	t.Helper()
	out := make([]*raft.Log, len(entries))
	for i, e := range entries {
		b, err := Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = &raft.Log{Index: first + uint64(i), Term: 1, Type: raft.LogCommand, Data: b}
	}
	return out
}

// apply1 applies one entry at index and returns its response.
func apply1(t *testing.T, f *FSM, index uint64, e Entry) *Response {
	t.Helper()
	r, ok := f.ApplyBatch(logs(t, index, e))[0].(*Response)
	if !ok {
		t.Fatalf("response is not a *Response")
	}
	return r
}

func snapshotBytes(t *testing.T, f *FSM) []byte {
	t.Helper()
	s, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	sink := &memSink{}
	if err := s.Persist(sink); err != nil {
		t.Fatal(err)
	}
	if !sink.closed {
		t.Fatal("Persist did not close the sink")
	}
	return sink.Bytes()
}

// memSink is an in-memory raft.SnapshotSink.
type memSink struct {
	bytes.Buffer
	closed, cancelled bool
	failWrite         bool
}

func (s *memSink) Write(p []byte) (int, error) {
	if s.failWrite {
		return 0, errors.New("disk full")
	}
	return s.Buffer.Write(p)
}
func (s *memSink) Close() error  { s.closed = true; return nil }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }
func (s *memSink) ID() string    { return "mem" }

// randomLog builds a reproducible log that exercises every entry type:
// grants (some with a cap on total hold time), refreshes, waits,
// hand-offs, expiries (some stale), cancels, ticks and membership.
func randomLog(seed int64, n int) []Entry {
	rng := rand.New(rand.NewSource(seed))
	keys := []string{"a", "b", "c/d", "e f"}
	owners := []string{"o1", "o2", "o3", "o4", "o5"}
	now := int64(1_000) * sec
	var out []Entry
	for i := 0; i < n; i++ {
		now += rng.Int63n(2 * sec)
		k, o := keys[rng.Intn(len(keys))], owners[rng.Intn(len(owners))]
		ttl := time.Duration(1+rng.Intn(5)) * time.Second
		var e Entry
		switch rng.Intn(10) {
		case 0, 1, 2:
			e = Entry{Op: engine.OpAcquire, Key: k, Owner: o, TTL: ttl, Now: now, Wait: rng.Intn(2) == 0}
			if rng.Intn(3) == 0 {
				e = Entry{Op: engine.OpAcquireKeys, Keys: []string{k}, Owner: o, TTL: ttl, Now: now, Wait: e.Wait, MaxHold: time.Duration(1+rng.Intn(8)) * time.Second}
			}
		case 3, 4:
			e = Entry{Op: engine.OpRelease, Key: k, Owner: o, Now: now}
		case 5:
			e = Entry{Op: engine.OpExtend, Key: k, Owner: o, TTL: ttl, Now: now}
		case 6:
			e = Entry{Op: engine.OpForceRelease, Key: k, Now: now}
		case 7:
			e = Entry{Op: engine.OpExpire, Key: k, Owner: o, ExpectFence: uint64(rng.Intn(i + 1)), Now: now}
		case 8:
			e = Entry{Op: engine.OpCancelWait, Key: k, Owner: o, Now: now}
		default:
			if rng.Intn(2) == 0 {
				e = Entry{Op: engine.OpTick, Now: now}
			} else {
				e = Entry{Member: SetMember, ID: fmt.Sprintf("n%d", rng.Intn(3)), HTTPAddr: fmt.Sprintf("127.0.0.1:%d", 8000+rng.Intn(5))}
			}
		}
		out = append(out, e)
	}
	return out
}

// applyInBatches applies entries from index 1 in batches of the given size.
func applyInBatches(t *testing.T, f *FSM, entries []Entry, size int) {
	t.Helper()
	all := logs(t, 1, entries...)
	for len(all) > 0 {
		k := min(size, len(all))
		resps := f.ApplyBatch(all[:k])
		if len(resps) != k {
			t.Fatalf("ApplyBatch returned %d responses for %d logs", len(resps), k)
		}
		all = all[k:]
	}
}

func TestFSM_SameLogGivesByteIdenticalSnapshots(t *testing.T) {
	entries := randomLog(42, 600)
	var first []byte
	for _, size := range []int{1, 7, 64, len(entries)} {
		f := newTestFSM(t, Config{MaxWaitersPerKey: 3})
		applyInBatches(t, f, entries, size)
		got := snapshotBytes(t, f)
		if first == nil {
			first = got
			continue
		}
		if !bytes.Equal(first, got) {
			t.Fatalf("batch size %d: snapshot differs from batch size 1 (%d vs %d bytes)", size, len(got), len(first))
		}
	}
	// A different log must give different bytes, or the check above proves nothing.
	f := newTestFSM(t, Config{MaxWaitersPerKey: 3})
	applyInBatches(t, f, randomLog(43, 600), 16)
	if bytes.Equal(first, snapshotBytes(t, f)) {
		t.Fatal("different logs gave identical snapshots")
	}
}

func TestFSM_SnapshotRoundTrip(t *testing.T) {
	src := newTestFSM(t, Config{})
	applyInBatches(t, src, randomLog(7, 400), 10)
	apply1(t, src, 401, Entry{Member: SetMember, ID: "n1", HTTPAddr: "127.0.0.1:9001"})
	apply1(t, src, 402, Entry{Op: engine.OpAcquire, Key: "held", Owner: "x", TTL: time.Hour, Now: src.Time()})
	apply1(t, src, 403, Entry{Op: engine.OpAcquire, Key: "held", Owner: "w", TTL: time.Hour, Now: src.Time(), Wait: true})
	want := snapshotBytes(t, src)

	dst := newTestFSM(t, Config{})
	apply1(t, dst, 1, Entry{Op: engine.OpAcquire, Key: "junk", Owner: "j", TTL: time.Hour, Now: 1})
	if err := dst.Restore(io.NopCloser(bytes.NewReader(want))); err != nil {
		t.Fatal(err)
	}
	if got := snapshotBytes(t, dst); !bytes.Equal(got, want) {
		t.Fatal("snapshot after restore differs from the original")
	}
	if dst.Time() != src.Time() || dst.AppliedIndex() != 403 {
		t.Fatalf("time/applied = %d/%d, want %d/403", dst.Time(), dst.AppliedIndex(), src.Time())
	}
	if !reflect.DeepEqual(dst.Members(), src.Members()) || !reflect.DeepEqual(dst.Waiters(), src.Waiters()) {
		t.Fatalf("members/waiters differ: %v %v vs %v %v", dst.Members(), dst.Waiters(), src.Members(), src.Waiters())
	}
	if _, ok, _ := dst.Get(t.Context(), "junk"); ok {
		t.Fatal("restore kept state from before the snapshot")
	}
	info, ok, err := dst.Get(t.Context(), "held")
	if err != nil || !ok || info.Owner != "x" || info.Fence != 402 || info.Waiters != 1 {
		t.Fatalf("restored lock = %+v %v %v", info, ok, err)
	}
	// The restored FSM keeps applying where the original left off.
	r := apply1(t, dst, 404, Entry{Op: engine.OpRelease, Key: "held", Owner: "x", Now: dst.Time()})
	if handoffOf(r.Result) == nil || handoffOf(r.Result).Owner != "w" || handoffOf(r.Result).Fence != 404 {
		t.Fatalf("hand-off after restore = %+v", handoffOf(r.Result))
	}
}

func TestFSM_RestoreCorruptSnapshotKeepsState(t *testing.T) {
	f := newTestFSM(t, Config{})
	apply1(t, f, 1, Entry{Op: engine.OpAcquire, Key: "k", Owner: "o", TTL: time.Hour, Now: sec})
	apply1(t, f, 2, Entry{Member: SetMember, ID: "n1", HTTPAddr: "h:1"})
	good := snapshotBytes(t, f)
	cases := map[string][]byte{
		"empty":        {},
		"bad version":  append([]byte{9}, good[1:]...),
		"truncated":    good[:len(good)-3],
		"trailing":     append(append([]byte{}, good...), 0),
		"engine bytes": append(append([]byte{}, good[:len(good)-5]...), 1, 2, 3, 4, 5),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			if err := f.Restore(io.NopCloser(bytes.NewReader(b))); !errors.Is(err, ErrCorruptSnapshot) {
				t.Fatalf("corrupt snapshot: Restore = %v, want an error matching ErrCorruptSnapshot", err)
			}
			if err := CheckSnapshot(bytes.NewReader(b)); !errors.Is(err, ErrCorruptSnapshot) {
				t.Fatalf("corrupt snapshot: CheckSnapshot = %v, want an error matching ErrCorruptSnapshot", err)
			}
			if got := snapshotBytes(t, f); !bytes.Equal(got, good) {
				t.Fatal("a failed restore changed the state")
			}
		})
	}
}

func TestFSM_PersistCancelsSinkOnWriteError(t *testing.T) {
	f := newTestFSM(t, Config{})
	s, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{failWrite: true}
	if err := s.Persist(sink); err == nil {
		t.Fatal("Persist succeeded on a failing sink")
	}
	if !sink.cancelled || sink.closed {
		t.Fatalf("cancelled=%v closed=%v, want the sink cancelled, not closed", sink.cancelled, sink.closed)
	}
}

// A stale expiry (etcd #15247) names a grant that was refreshed meanwhile:
// same key, owner and fence, but a later deadline. Applying it must be a
// no-op, also when its stamped time is past the old deadline.
func TestFSM_StaleExpireIsNoOp(t *testing.T) {
	f := newTestFSM(t, Config{})
	r := apply1(t, f, 1, Entry{Op: engine.OpAcquire, Key: "k", Owner: "a", TTL: 10 * time.Second, Now: 100 * sec})
	if !r.Result.OK || r.Result.Grant.Fence != 1 {
		t.Fatalf("acquire = %+v", r.Result)
	}
	// Refreshed at 108s: deadline 118s, same fence.
	r = apply1(t, f, 2, Entry{Op: engine.OpExtend, Key: "k", Owner: "a", TTL: 10 * time.Second, Now: 108 * sec})
	if !r.Result.OK || r.Result.Grant.Fence != 1 {
		t.Fatalf("extend = %+v", r.Result)
	}
	// A paused ex-leader still believes the deadline is 110s.
	stale := []Entry{
		{Op: engine.OpExpire, Key: "k", Owner: "a", ExpectFence: 1, Now: 111 * sec},
		{Op: engine.OpExpire, Key: "k", Owner: "b", ExpectFence: 1, Now: 111 * sec}, // wrong owner
		{Op: engine.OpExpire, Key: "k", Owner: "a", ExpectFence: 7, Now: 200 * sec}, // wrong fence, even past the deadline
	}
	for i, e := range stale {
		if r := apply1(t, f, uint64(3+i), e); r.Err != nil || r.Result.OK {
			t.Fatalf("stale expire %d applied: %+v", i, r)
		}
	}
	info, ok, err := f.Get(t.Context(), "k")
	if err != nil || !ok || info.Owner != "a" || info.Fence != 1 {
		t.Fatalf("lock after stale expiries = %+v %v %v", info, ok, err)
	}
	// The genuine expiry, with the current fence, applies.
	if r := apply1(t, f, 6, Entry{Op: engine.OpExpire, Key: "k", Owner: "a", ExpectFence: 1, Now: 200 * sec}); !r.Result.OK {
		t.Fatalf("due expire did not apply: %+v", r)
	}
	if _, ok, _ := f.Get(t.Context(), "k"); ok {
		t.Fatal("lock still there after its expiry applied")
	}
}

func TestFSM_StaleExpireBeforeDeadlineIsNoOp(t *testing.T) {
	f := newTestFSM(t, Config{})
	apply1(t, f, 1, Entry{Op: engine.OpAcquire, Key: "k", Owner: "a", TTL: 10 * time.Second, Now: 100 * sec})
	// Right grant, but FSM time (105s) is before the deadline (110s).
	if r := apply1(t, f, 2, Entry{Op: engine.OpExpire, Key: "k", Owner: "a", ExpectFence: 1, Now: 105 * sec}); r.Result.OK {
		t.Fatal("expire before the deadline applied")
	}
}

func TestFSM_HandoffFenceIsEntryIndex(t *testing.T) {
	var seen []Applied
	f := newTestFSM(t, Config{OnApply: func(a Applied) { seen = append(seen, a) }})
	if r := apply1(t, f, 10, Entry{Op: engine.OpAcquire, Key: "k", Owner: "a", TTL: time.Minute, Now: sec}); r.Result.Grant.Fence != 10 {
		t.Fatalf("first grant fence = %d, want the entry index 10", r.Result.Grant.Fence)
	}
	r := apply1(t, f, 11, Entry{Op: engine.OpAcquire, Key: "k", Owner: "b", TTL: time.Minute, Now: 2 * sec, Wait: true})
	if !r.Result.Queued || r.Result.OK {
		t.Fatalf("waiting acquire = %+v, want queued", r.Result)
	}
	apply1(t, f, 12, Entry{Op: engine.OpAcquire, Key: "k", Owner: "c", TTL: time.Minute, Now: 2 * sec, Wait: true})
	if got := f.Waiters(); !reflect.DeepEqual(got, []Waiter{{Key: "k", Owner: "b"}, {Key: "k", Owner: "c"}}) {
		t.Fatalf("waiters = %v", got)
	}
	// Several entries in one batch: each hand-off gets its own entry's index.
	resps := f.ApplyBatch(logs(t, 15,
		Entry{Op: engine.OpRelease, Key: "k", Owner: "a", Now: 3 * sec},
		Entry{Op: engine.OpRelease, Key: "k", Owner: "b", Now: 3 * sec},
	))
	for i, want := range []struct {
		owner string
		fence uint64
	}{{"b", 15}, {"c", 16}} {
		h := handoffOf(resps[i].(*Response).Result)
		if h == nil || h.Owner != want.owner || h.Fence != want.fence {
			t.Fatalf("hand-off %d = %+v, want %s with fence %d", i, h, want.owner, want.fence)
		}
	}
	if got := f.Waiters(); len(got) != 0 {
		t.Fatalf("waiters after hand-offs = %v", got)
	}
	last := seen[len(seen)-1]
	if last.Index != 16 || handoffOf(last.Result) == nil || handoffOf(last.Result).Owner != "c" {
		t.Fatalf("OnApply saw %+v last", last)
	}
	if len(seen) != 5 {
		t.Fatalf("OnApply called %d times, want 5", len(seen))
	}
}

func TestFSM_CancelWaitRemovesWaiter(t *testing.T) {
	f := newTestFSM(t, Config{})
	apply1(t, f, 1, Entry{Op: engine.OpAcquire, Key: "k", Owner: "a", TTL: time.Minute, Now: sec})
	apply1(t, f, 2, Entry{Op: engine.OpAcquire, Key: "k", Owner: "b", TTL: time.Minute, Now: sec, Wait: true})
	if f.WaiterCount() != 1 {
		t.Fatalf("waiter count = %d", f.WaiterCount())
	}
	if r := apply1(t, f, 3, Entry{Op: engine.OpCancelWait, Key: "k", Owner: "b", Now: sec}); !r.Result.OK {
		t.Fatalf("cancel = %+v", r)
	}
	if f.WaiterCount() != 0 {
		t.Fatalf("waiter count after cancel = %d", f.WaiterCount())
	}
	if r := apply1(t, f, 4, Entry{Op: engine.OpRelease, Key: "k", Owner: "a", Now: sec}); !r.Result.OK || handoffOf(r.Result) != nil {
		t.Fatalf("release after cancel = %+v, want no hand-off", r.Result)
	}
}

func TestFSM_TimeNeverGoesBack(t *testing.T) {
	f := newTestFSM(t, Config{})
	apply1(t, f, 1, Entry{Op: engine.OpTick, Now: 50 * sec})
	apply1(t, f, 2, Entry{Op: engine.OpAcquire, Key: "k", Owner: "a", TTL: time.Second, Now: 10 * sec})
	if f.Time() != 50*sec {
		t.Fatalf("time = %d, want %d", f.Time(), 50*sec)
	}
	// The acquire was stamped earlier than FSM time: its deadline counts
	// from FSM time, never from the past.
	info, _, _ := f.Get(t.Context(), "k")
	if info.Deadline != 51*sec {
		t.Fatalf("deadline = %d, want %d", info.Deadline, 51*sec)
	}
}

func TestFSM_PerCommandErrorsStayInTheirResponse(t *testing.T) {
	f := newTestFSM(t, Config{MaxKeys: 1})
	batch := logs(t, 1,
		Entry{Op: engine.OpAcquire, Key: "a", Owner: "o", TTL: time.Minute, Now: sec},
		Entry{Op: engine.OpAcquire, Key: "b", Owner: "o", TTL: time.Minute, Now: sec},
		Entry{Op: engine.OpRelease, Key: "a", Owner: "o", Now: sec},
	)
	batch = append(batch, &raft.Log{Index: 4, Type: raft.LogConfiguration})
	resps := f.ApplyBatch(batch)
	if len(resps) != 4 {
		t.Fatalf("%d responses for 4 logs", len(resps))
	}
	if r := resps[0].(*Response); !r.Result.OK || r.Err != nil {
		t.Fatalf("first acquire = %+v", r)
	}
	if r := resps[1].(*Response); !errors.Is(r.Err, drivers.ErrFull) {
		t.Fatalf("second acquire error = %v, want ErrFull", r.Err)
	}
	if r := resps[2].(*Response); !r.Result.OK {
		t.Fatalf("release after the refused acquire = %+v", r)
	}
	if resps[3] != nil {
		t.Fatalf("configuration entry response = %v, want nil", resps[3])
	}
	if f.AppliedIndex() != 4 {
		t.Fatalf("applied index = %d, want 4", f.AppliedIndex())
	}
}

// A committed entry that does not decode stops the node (a panic with a
// *CorruptEntryError naming the index) before any entry of its batch is
// applied: skipping it could drop a grant.
func TestFSM_CorruptEntryStopsTheNode(t *testing.T) {
	cases := map[string]struct {
		data []byte
		want error
	}{
		"truncated acquire":    {[]byte{byte(engine.OpAcquire), payloadVersion, 0xff}, ErrMalformed},
		"unknown, not skipped": {[]byte{0x33, 1}, ErrUnknownType},
		// Entries 8 (acquire-shared) and 9 (acquire-all) were never in a
		// release, and entry 10 replaced them: an old one is unknown.
		"retired acquire-shared (8)": {[]byte{8, payloadVersion, 1, 'k', 1, 'o', 2, 2, 0, byte(engine.Semaphore), 2}, ErrUnknownType},
		"retired acquire-all (9)":    {[]byte{9, payloadVersion, 2, 1, 'a', 1, 'b', 1, 'o', 2, 2, 0}, ErrUnknownType},
		"empty":                      {nil, ErrMalformed},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			f := newTestFSM(t, Config{})
			apply1(t, f, 1, Entry{Op: engine.OpAcquire, Key: "held", Owner: "o", TTL: time.Minute, Now: sec})
			before := snapshotBytes(t, f)
			batch := logs(t, 2, Entry{Op: engine.OpAcquire, Key: "a", Owner: "o", TTL: time.Minute, Now: sec})
			batch = append(batch, &raft.Log{Index: 3, Term: 7, Type: raft.LogCommand, Data: c.data})
			got := recoverPanic(func() { f.ApplyBatch(batch) })
			var ce *CorruptEntryError
			if !errors.As(got, &ce) || ce.Index != 3 || ce.Term != 7 || !errors.Is(ce, c.want) {
				t.Fatalf("panic value = %v, want a *CorruptEntryError for index 3 matching %v", got, c.want)
			}
			if msg := ce.Error(); !strings.Contains(msg, "entry 3") || !strings.Contains(msg, "stops rather than skip") {
				t.Fatalf("message does not say what happened: %s", msg)
			}
			if after := snapshotBytes(t, f); !bytes.Equal(after, before) {
				t.Fatal("part of the batch was applied before the node stopped")
			}
		})
	}
}

// recoverPanic runs fn and returns the value it panicked with as an error
// (nil when it returned, or panicked with something else).
func recoverPanic(fn func()) (err error) {
	defer func() { err, _ = recover().(error) }()
	fn()
	return nil
}

func TestFSM_IgnorableUnknownEntryIsSkipped(t *testing.T) {
	f := newTestFSM(t, Config{})
	l := &raft.Log{Index: 1, Type: raft.LogCommand, Data: []byte{byte(IgnorableFlag | 0x33), 7, 1, 2, 3}}
	r := f.Apply(l).(*Response)
	if r.Err != nil || r.Type != IgnorableFlag|0x33 {
		t.Fatalf("ignorable entry response = %+v", r)
	}
	if f.AppliedIndex() != 1 {
		t.Fatalf("applied index = %d, want 1", f.AppliedIndex())
	}
}

func TestFSM_MembersAndWaitApplied(t *testing.T) {
	f := newTestFSM(t, Config{})
	done := make(chan error, 1)
	go func() { done <- f.WaitApplied(t.Context(), 2) }()
	apply1(t, f, 1, Entry{Member: SetMember, ID: "n1", HTTPAddr: "127.0.0.1:1"})
	apply1(t, f, 2, Entry{Member: SetMember, ID: "n2", HTTPAddr: "127.0.0.1:2"})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	apply1(t, f, 3, Entry{Member: RemoveMember, ID: "n1"})
	if got := f.Members(); !reflect.DeepEqual(got, map[string]string{"n2": "127.0.0.1:2"}) {
		t.Fatalf("members = %v", got)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if err := f.WaitApplied(ctx, 99); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitApplied past the end = %v, want deadline exceeded", err)
	}
}

// The engine hands a key to a waiter before OnApply hears of it. While
// OnApply has not run, the batch does not count as applied, and IsQueuedOnceDelivered,
// finding the waiter gone from the queue, does not answer: a caller that
// sees "not queued" also sees the hand-off delivered.
func TestFSM_IsQueuedOnceDeliveredAnswersNotQueuedOnlyOnceTheHandoffIsDelivered(t *testing.T) {
	reached, release := make(chan struct{}), make(chan struct{})
	f := newTestFSM(t, Config{OnApply: func(a Applied) {
		if h := handoffOf(a.Result); h != nil && h.Owner == "b" {
			close(reached)
			<-release
		}
	}})
	apply1(t, f, 1, Entry{Op: engine.OpAcquire, Key: "k", Owner: "a", TTL: time.Minute, Now: 1})
	apply1(t, f, 2, Entry{Op: engine.OpAcquire, Key: "k", Owner: "b", TTL: time.Minute, Now: 2, Wait: true})
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.ApplyBatch(logs(t, 3, Entry{Op: engine.OpRelease, Key: "k", Owner: "a", Now: 3}))
	}()
	<-reached
	if got := f.AppliedIndex(); got != 2 {
		t.Fatalf("AppliedIndex = %d while OnApply runs for 3, want 2", got)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if ok, err := f.IsQueuedOnceDelivered(ctx, "k", "b"); ok || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("IsQueuedOnceDelivered while the hand-off is undelivered = %v, %v; want no answer", ok, err)
	}
	close(release)
	<-done
	if ok, err := f.IsQueuedOnceDelivered(t.Context(), "k", "b"); ok || err != nil {
		t.Fatalf("IsQueuedOnceDelivered after the hand-off = %v, %v", ok, err)
	}
	if got := f.AppliedIndex(); got != 3 {
		t.Fatalf("AppliedIndex = %d, want 3", got)
	}
}

// handoffOf is r's one hand-off, or nil.
func handoffOf(r engine.Result) *engine.Grant {
	if len(r.Handoffs) != 1 {
		return nil
	}
	return &r.Handoffs[0]
}

// Snapshot copies the state out and Persist encodes it later, while
// applies go on: what Persist writes must be the state at Snapshot, not
// at Persist. Entries applied in between (grants, hand-offs, expiries,
// membership) must not show.
func TestFSM_SnapshotIsTheStateWhenTaken(t *testing.T) {
	for seed := range int64(10) {
		log := randomLog(seed, 400)
		f := newTestFSM(t, Config{})
		f.ApplyBatch(logs(t, 1, log[:200]...))
		s, err := f.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		f.ApplyBatch(logs(t, 201, log[200:]...))
		sink := &memSink{}
		if err := s.Persist(sink); err != nil {
			t.Fatal(err)
		}
		s.Release()

		ref := newTestFSM(t, Config{})
		ref.ApplyBatch(logs(t, 1, log[:200]...))
		if want := snapshotBytes(t, ref); !bytes.Equal(sink.Bytes(), want) {
			t.Fatalf("seed %d: the snapshot holds what was applied after it (%d bytes, want %d)", seed, sink.Len(), len(want))
		}
		if now := snapshotBytes(t, f); bytes.Equal(now, sink.Bytes()) {
			t.Fatalf("seed %d: the later entries changed nothing: the test proves nothing", seed)
		}
	}
}

// Entry 10's cap reaches the engine, and a snapshot carries it: a node
// restored from one keeps every grant's cap and every waiter's.
func TestFSM_HoldCapSurvivesSnapshot(t *testing.T) {
	src := newTestFSM(t, Config{})
	now := 100 * sec
	apply1(t, src, 1, Entry{Op: engine.OpAcquireKeys, Keys: []string{"k"}, Owner: "x", TTL: time.Minute, Now: now, MaxHold: 30 * time.Second})
	apply1(t, src, 2, Entry{Op: engine.OpAcquireKeys, Keys: []string{"k"}, Owner: "y", TTL: time.Minute, Now: now, Wait: true, MaxHold: 20 * time.Second})
	if info, _, _ := src.Get(t.Context(), "k"); info.Deadline != now+30*sec {
		t.Fatalf("grant %+v, want its deadline at the cap, %d", info.Grant, now+30*sec)
	}
	dst := newTestFSM(t, Config{})
	if err := dst.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, src)))); err != nil {
		t.Fatal(err)
	}
	r := apply1(t, dst, 3, Entry{Op: engine.OpExtend, Key: "k", Owner: "x", TTL: time.Hour, Now: now + 10*sec})
	if !r.Result.OK || r.Result.Grant.Deadline != now+30*sec {
		t.Fatalf("refresh after restore: %+v, want the deadline at the cap", r.Result)
	}
	r = apply1(t, dst, 4, Entry{Op: engine.OpRelease, Key: "k", Owner: "x", Now: now + 11*sec})
	if h := handoffOf(r.Result); h == nil || h.Owner != "y" || h.Deadline != now+31*sec {
		t.Fatalf("hand-off after restore: %+v, want y's with its cap of 20s from now", h)
	}
}
