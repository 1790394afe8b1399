package fsm

import (
	"bytes"
	"errors"
	"math/rand"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zerotal/lock/engine"
)

// lockLog is randomLog without member entries (they are never batch
// parts) and with expiries that name no grant, so that applying it in
// batches or one entry at a time gives the same results apart from the
// fence numbers.
func lockLog(seed int64, n int) []Entry {
	var out []Entry
	for _, e := range randomLog(seed, n) {
		if e.Op == 0 {
			continue
		}
		if e.Op == engine.OpExpire {
			e.ExpectFence = 0
		}
		out = append(out, e)
	}
	return out
}

// batchLogs encodes entries as raft logs from index first, cut into batch
// entries of random sizes (1 to 5 parts; a run of one stays a plain entry).
func batchLogs(t *testing.T, rng *rand.Rand, first uint64, entries []Entry) []*raft.Log {
	t.Helper()
	var out []*raft.Log
	for len(entries) > 0 {
		k := min(1+rng.Intn(5), len(entries))
		parts := make([][]byte, k)
		for i, e := range entries[:k] {
			b, err := Encode(e)
			if err != nil {
				t.Fatal(err)
			}
			parts[i] = b
		}
		data := parts[0]
		if k > 1 {
			var err error
			if data, err = EncodeBatch(parts); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, &raft.Log{Index: first + uint64(len(out)), Term: 1, Type: raft.LogCommand, Data: data})
		entries = entries[k:]
	}
	return out
}

// results flattens the responses of ApplyBatch into one per lock entry.
func results(t *testing.T, resps []interface{}) []*Response {
	t.Helper()
	var out []*Response
	for _, x := range resps {
		r := x.(*Response)
		if r.Type != Batch {
			out = append(out, r)
			continue
		}
		if !reflect.DeepEqual(r.Result, engine.Result{}) || r.Err != nil {
			t.Fatalf("a batch's own response carries %+v, %v", r.Result, r.Err)
		}
		for i := range r.Parts {
			out = append(out, &r.Parts[i])
		}
	}
	return out
}

// withoutFences is a result with every fence zeroed.
func withoutFences(r engine.Result) engine.Result {
	r.Grant.Fence = 0
	r.Handoffs, r.Grants = zeroFences(r.Handoffs), zeroFences(r.Grants)
	return r
}

func zeroFences(gs []engine.Grant) []engine.Grant {
	if gs == nil {
		return nil
	}
	gs = slices.Clone(gs)
	for i := range gs {
		gs[i].Fence = 0
	}
	return gs
}

// A batch entry applies its parts exactly as if each were its own entry:
// the same results, waiters and hand-offs; only the fence numbers differ,
// and they stay strictly increasing. Two FSMs fed the same batched log
// end with byte-identical snapshots.
func TestFSM_BatchEntriesApplyLikeTheirPartsOneByOne(t *testing.T) {
	for seed := int64(0); seed < 20; seed++ {
		entries := lockLog(seed, 300)
		single := newTestFSM(t, Config{})
		want := results(t, single.ApplyBatch(logs(t, 1, entries...)))

		var applied []Applied
		batched := newTestFSM(t, Config{OnApply: func(a Applied) { applied = append(applied, a) }})
		twin := newTestFSM(t, Config{})
		rng := rand.New(rand.NewSource(seed))
		bl := batchLogs(t, rng, 1, entries)
		var got []*Response
		for len(bl) > 0 { // several raft batches, as raft hands them over
			k := min(1+rng.Intn(4), len(bl))
			got = append(got, results(t, batched.ApplyBatch(bl[:k]))...)
			twin.ApplyBatch(bl[:k])
			bl = bl[k:]
		}
		if len(got) != len(want) || len(applied) != len(entries) {
			t.Fatalf("seed %d: %d results and %d OnApply calls for %d entries", seed, len(got), len(applied), len(entries))
		}
		var last uint64
		held := map[string]uint64{} // key -> fence of its grant, to tell a refresh
		for i := range want {
			if g, w := withoutFences(got[i].Result), withoutFences(want[i].Result); !equalResults(g, w) {
				t.Fatalf("seed %d entry %d (%v): batched %+v, one by one %+v", seed, i, entries[i].Op, got[i].Result, want[i].Result)
			}
			if !reflect.DeepEqual(applied[i].Entry, entries[i]) || !equalResults(applied[i].Result, got[i].Result) {
				t.Fatalf("seed %d entry %d: OnApply saw %+v", seed, i, applied[i])
			}
			for _, g := range newGrants(entries[i], got[i].Result, held) {
				if g <= last {
					t.Fatalf("seed %d entry %d: fence %d after %d", seed, i, g, last)
				}
				last = g
			}
		}
		if !bytes.Equal(snapshotBytes(t, batched), snapshotBytes(t, twin)) {
			t.Fatalf("seed %d: the same batched log gave different snapshots", seed)
		}
	}
}

func equalResults(a, b engine.Result) bool {
	if !slices.Equal(a.Handoffs, b.Handoffs) {
		return false
	}
	a.Handoffs, b.Handoffs = nil, nil
	return errors.Is(a.Err, b.Err) && errors.Is(b.Err, a.Err) && reflect.DeepEqual(withoutErr(a), withoutErr(b))
}

func withoutErr(r engine.Result) engine.Result { r.Err = nil; return r }

// newGrants are the fences of the grants r made that are not refreshes
// of the same grant; held tracks each key's fence.
func newGrants(e Entry, r engine.Result, held map[string]uint64) []uint64 {
	var fs []uint64
	if keys := e.AcquireKeys(); len(keys) == 1 && r.OK && held[keys[0]] != r.Grant.Fence {
		fs = append(fs, r.Grant.Fence)
		held[keys[0]] = r.Grant.Fence
	}
	for _, h := range r.Handoffs {
		if len(fs) == 0 || fs[0] != h.Fence { // an acquire may report its own grant as the hand-off
			fs = append(fs, h.Fence)
			held[h.Key] = h.Fence
		}
	}
	return fs
}

// Two grants in one batch entry: the first takes the entry's index, the
// second the next fence, and a plain entry after the batch takes its own
// index again once that is above them.
func TestFSM_BatchGrantsTakeIncreasingFences(t *testing.T) {
	f := newTestFSM(t, Config{})
	b := batchOf(t,
		Entry{Op: engine.OpAcquire, Key: "a", Owner: "o", TTL: time.Minute, Now: sec},
		Entry{Op: engine.OpAcquire, Key: "b", Owner: "o", TTL: time.Minute, Now: sec},
		Entry{Op: engine.OpAcquire, Key: "a", Owner: "p", TTL: time.Minute, Now: sec, Wait: true},
		Entry{Op: engine.OpRelease, Key: "a", Owner: "o", Now: sec},
	)
	rs := results(t, f.ApplyBatch([]*raft.Log{{Index: 5, Type: raft.LogCommand, Data: b}}))
	if rs[0].Result.Grant.Fence != 5 || rs[1].Result.Grant.Fence != 6 || !rs[2].Result.Queued ||
		handoffOf(rs[3].Result) == nil || handoffOf(rs[3].Result).Owner != "p" || handoffOf(rs[3].Result).Fence != 7 {
		t.Fatalf("fences in the batch: %+v %+v %+v %+v", rs[0].Result, rs[1].Result, rs[2].Result, rs[3].Result)
	}
	if r := apply1(t, f, 6, Entry{Op: engine.OpAcquire, Key: "c", Owner: "o", TTL: time.Minute, Now: sec}); r.Result.Grant.Fence != 8 {
		t.Fatalf("next entry at index 6: fence %d, want 8 (above the batch's)", r.Result.Grant.Fence)
	}
	if r := apply1(t, f, 20, Entry{Op: engine.OpAcquire, Key: "d", Owner: "o", TTL: time.Minute, Now: sec}); r.Result.Grant.Fence != 20 {
		t.Fatalf("entry at index 20: fence %d, want its index", r.Result.Grant.Fence)
	}
}

func batchOf(t *testing.T, entries ...Entry) []byte {
	t.Helper()
	parts := make([][]byte, len(entries))
	for i, e := range entries {
		b, err := Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		parts[i] = b
	}
	b, err := EncodeBatch(parts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCodec_BatchRoundTripsAndRefusesBadBytes(t *testing.T) {
	var lock []Entry
	for _, e := range allTypesEntries() {
		if e.Op != 0 {
			lock = append(lock, e)
		}
	}
	b := batchOf(t, lock...)
	if b[0] != 18 || EntryType(b[0]) != Batch || Batch.String() != "batch" {
		t.Fatalf("batch type byte %d", b[0])
	}
	got, err := DecodeLog(b)
	if err != nil || len(got) != len(lock) {
		t.Fatalf("DecodeLog = %d entries, %v", len(got), err)
	}
	for i := range lock {
		if !reflect.DeepEqual(got[i], lock[i]) {
			t.Fatalf("part %d: %+v, want %+v", i, got[i], lock[i])
		}
	}
	if _, err := Decode(b); !errors.Is(err, ErrMalformed) {
		t.Fatalf("Decode of a batch = %v, want ErrMalformed (DecodeLog reads batches)", err)
	}
	member, _ := Encode(Entry{Member: SetMember, ID: "n1", HTTPAddr: "127.0.0.1:1"})
	if _, err := EncodeBatch([][]byte{member}); !errors.Is(err, ErrUnknownType) {
		t.Fatalf("EncodeBatch with a member entry = %v", err)
	}
	if _, err := EncodeBatch([][]byte{b}); !errors.Is(err, ErrUnknownType) {
		t.Fatalf("EncodeBatch of a batch = %v", err)
	}
	if _, err := EncodeBatch(nil); err == nil {
		t.Fatal("EncodeBatch of nothing accepted")
	}
	one, _ := Encode(lock[0])
	cases := map[string][]byte{
		"no version":        {byte(Batch)},
		"bad version":       {byte(Batch), 9, 1},
		"zero parts":        {byte(Batch), payloadVersion, 0},
		"too many parts":    {byte(Batch), payloadVersion, 0x81, 0x08},
		"truncated":         b[:len(b)-1],
		"trailing":          append(append([]byte{}, b...), 0),
		"part past the end": {byte(Batch), payloadVersion, 1, 50, 1},
		"member part":       append([]byte{byte(Batch), payloadVersion, 1, byte(len(member))}, member...),
		"bad part":          append([]byte{byte(Batch), payloadVersion, 1, byte(len(one) - 1)}, one[:len(one)-1]...),
	}
	for name, c := range cases {
		if _, err := DecodeLog(c); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: DecodeLog(% x) = %v, want ErrMalformed", name, c, err)
		}
	}
}

// FuzzDecodeLog: no input makes DecodeLog panic, and what it accepts as
// a batch re-encodes to a batch that decodes to the same entries.
func FuzzDecodeLog(f *testing.F) {
	var parts [][]byte
	for _, e := range allTypesEntries() {
		b, _ := Encode(e)
		f.Add(b)
		if e.Op != 0 {
			parts = append(parts, b)
		}
	}
	whole, _ := EncodeBatch(parts)
	f.Add(whole)
	f.Fuzz(func(t *testing.T, b []byte) {
		es, err := DecodeLog(b)
		if err != nil || len(b) == 0 || EntryType(b[0]) != Batch {
			return
		}
		enc := make([][]byte, len(es))
		for i, e := range es {
			if enc[i], err = Encode(e); err != nil {
				t.Fatalf("re-encode part %d %+v: %v", i, e, err)
			}
		}
		b2, err := EncodeBatch(enc)
		if err != nil {
			t.Fatalf("re-encode the batch: %v", err)
		}
		es2, err := DecodeLog(b2)
		if err != nil || len(es2) != len(es) {
			t.Fatalf("re-decode: %d entries, %v; want %d", len(es2), err, len(es))
		}
		for i := range es {
			if !reflect.DeepEqual(es2[i], es[i]) {
				t.Fatalf("part %d re-decoded as %+v, want %+v", i, es2[i], es[i])
			}
		}
	})
}
