package fsm

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zerotal/lock/engine"
)

// FuzzDecodeSnapshot: no input makes the snapshot decoder panic, and
// whatever it accepts survives a round trip through the encoder unchanged.
func FuzzDecodeSnapshot(f *testing.F) {
	for _, b := range snapshotSeeds() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st, eng, err := decodeSnapshot(b)
		if err != nil {
			if !errors.Is(err, ErrCorruptSnapshot) {
				t.Fatalf("refusal does not match ErrCorruptSnapshot: %v", err)
			}
			return
		}
		st2, eng2, err := decodeSnapshot(encodeSnapshot(&st, nil, eng))
		if err != nil {
			t.Fatalf("re-encoded snapshot does not decode: %v", err)
		}
		if !reflect.DeepEqual(st, st2) || !bytes.Equal(eng, eng2) {
			t.Fatalf("round trip changed the state: %+v -> %+v", st, st2)
		}
	})
}

// FuzzRestore drives FSM.Restore, engine part included: a refused
// snapshot leaves the whole state as it was (byte for byte); an accepted
// one is what the FSM then snapshots again, stably.
func FuzzRestore(f *testing.F) {
	seeds := snapshotSeeds()
	for _, b := range seeds {
		f.Add(b)
	}
	fm, err := New(Config{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = fm.Close() })
	f.Fuzz(func(t *testing.T, b []byte) {
		// A known state before every input, so a refusal can be checked.
		if err := fm.Restore(io.NopCloser(bytes.NewReader(seeds[0]))); err != nil {
			t.Fatal(err)
		}
		before := snapshotBytes(t, fm)
		checkErr := CheckSnapshot(bytes.NewReader(b))
		if err := fm.Restore(io.NopCloser(bytes.NewReader(b))); err != nil {
			if !errors.Is(err, ErrCorruptSnapshot) || !errors.Is(checkErr, ErrCorruptSnapshot) {
				t.Fatalf("Restore refused with %v, CheckSnapshot said %v; want both to match ErrCorruptSnapshot", err, checkErr)
			}
			if after := snapshotBytes(t, fm); !bytes.Equal(after, before) {
				t.Fatalf("refused snapshot (%v) changed the state", err)
			}
			return
		}
		if checkErr != nil {
			t.Fatalf("Restore accepted what CheckSnapshot refuses: %v", checkErr)
		}
		once := snapshotBytes(t, fm)
		if err := fm.Restore(io.NopCloser(bytes.NewReader(once))); err != nil {
			t.Fatalf("the FSM refuses its own snapshot: %v", err)
		}
		if again := snapshotBytes(t, fm); !bytes.Equal(again, once) {
			t.Fatal("snapshot after restoring a snapshot differs")
		}
	})
}

// snapshotSeeds are real snapshots (a busy table with members and a
// waiter, the same with caps on total hold time, an empty one) and a few
// broken ones.
func snapshotSeeds() [][]byte {
	sec := int64(time.Second)
	var ls []Entry
	ls = append(ls,
		Entry{Member: SetMember, ID: "n1", HTTPAddr: "127.0.0.1:8080"},
		Entry{Op: engine.OpAcquire, Key: "a", Owner: "x", TTL: time.Minute, Now: sec},
		Entry{Op: engine.OpAcquire, Key: "b", Owner: "y", TTL: time.Minute, Now: sec},
		Entry{Op: engine.OpAcquire, Key: "b", Owner: "z", TTL: time.Minute, Now: sec, Wait: true},
		Entry{Op: engine.OpAcquireKeys, Keys: []string{"s"}, Owner: "x", TTL: time.Minute, Now: sec, Claim: engine.Claim{Kind: engine.Semaphore, Limit: 2}},
		Entry{Op: engine.OpAcquireKeys, Keys: []string{"r"}, Owner: "x", TTL: time.Minute, Now: sec, Claim: engine.Claim{Kind: engine.RWLock, Write: true}},
		Entry{Op: engine.OpAcquireKeys, Keys: []string{"r"}, Owner: "y", TTL: time.Minute, Now: sec, Wait: true, Claim: engine.Claim{Kind: engine.RWLock}},
	)
	busy := persisted(ls)
	capped := persisted(append(ls,
		Entry{Op: engine.OpAcquireKeys, Keys: []string{"c"}, Owner: "x", TTL: time.Minute, Now: sec, MaxHold: 30 * time.Second},
		Entry{Op: engine.OpAcquireKeys, Keys: []string{"c"}, Owner: "y", TTL: time.Minute, Now: sec, Wait: true, MaxHold: time.Hour},
	))
	empty := newState()
	return [][]byte{
		busy,
		capped,
		encodeSnapshot(&empty, nil, nil),
		busy[:len(busy)/2],
		{snapshotVersion, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
	}
}

// persisted is the snapshot of a new FSM that applied ls.
func persisted(ls []Entry) []byte {
	fm, err := New(Config{})
	if err != nil {
		panic(err)
	}
	defer fm.Close()
	for i, e := range ls {
		b, err := Encode(e)
		if err != nil {
			panic(err)
		}
		fm.ApplyBatch([]*raft.Log{{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: b}})
	}
	s, err := fm.Snapshot()
	if err != nil {
		panic(err)
	}
	sink := &memSink{}
	if err := s.Persist(sink); err != nil {
		panic(err)
	}
	return sink.Bytes()
}
