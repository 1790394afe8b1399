package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"testing"
	"time"
)

// A snapshot whose checksum is right but whose content breaks the table's
// rules is refused too (it can only come from a bug or a forged file).
func TestSnapshot_RejectsInconsistentContent(t *testing.T) {
	build := func(edit func(tb *table)) []byte {
		tb := newTable(0, 0)
		for _, c := range []Command{acq("a", "x", 100, t0), acq("b", "y", 100, t0), acqWait("b", "z", 100, t0)} {
			tb.applyCommand(&c)
		}
		edit(tb)
		return tb.encode()
	}
	cases := map[string]func(tb *table){
		"fence above counter": func(tb *table) { tb.counter = 1 },
		"empty owner":         func(tb *table) { tb.entries["a"].first.owner = "" },
		"zero fence":          func(tb *table) { tb.entries["a"].first.fence = 0 },
		"holder also waiting": func(tb *table) { tb.entries["b"].queue.line.head().owner = "y" },
		"waiter twice": func(tb *table) {
			q := tb.entries["b"].queue
			q.line.items = append(q.line.items, q.line.items[0])
		},
		"bad waiter ttl":  func(tb *table) { tb.entries["b"].queue.line.head().ttl = 0 },
		"cap of no grant": func(tb *table) { tb.caps = map[uint64]int64{99: t0} },
		"empty key": func(tb *table) {
			e := tb.entries["a"]
			delete(tb.entries, "a")
			e.key = ""
			tb.entries[""] = e
		},
	}
	for name, edit := range cases {
		if _, err := decodeTable(build(edit)); !errors.Is(err, errCorrupt) {
			t.Errorf("%s: decode = %v, want a corrupt-snapshot error", name, err)
		}
	}
	if _, err := decodeTable(build(func(*table) {})); err != nil {
		t.Fatalf("unedited snapshot refused: %v", err)
	}
}

func TestSnapshot_EmptyTable(t *testing.T) {
	tb := newTable(0, 0)
	tb.advance(42)
	b := tb.encode()
	got, err := decodeTable(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.now != 42 || got.counter != 0 || len(got.entries) != 0 {
		t.Fatalf("decoded %+v", got)
	}
	if !bytes.Equal(got.encode(), b) {
		t.Fatal("re-encoding differs")
	}
}

// seedSnapshot is a table of two keys, one with a waiter, encoded: a seed
// of the fuzz tests.
func seedSnapshot() []byte {
	tb := newTable(0, 0)
	for _, c := range []Command{acq("a", "x", 100, t0), acq("b", "y", time.Second, t0), acqWait("b", "z", 100, t0)} {
		tb.applyCommand(&c)
	}
	return tb.encode()
}

// seedCappedSnapshot is seedSnapshot's table with a cap on a grant and on
// a waiter (version 3): a seed of the fuzz tests.
func seedCappedSnapshot() []byte {
	tb := newTable(0, 0)
	for _, c := range []Command{acq("a", "x", 100, t0), acqCap("b", "y", time.Second, 50, t0, false), acqCap("b", "z", 100, 70, t0, true)} {
		tb.applyCommand(&c)
	}
	return tb.encode()
}

// FuzzDecodeSnapshot: decoding never panics; whatever decodes satisfies
// the table's invariants and encodes to a stable form. Each input is tried
// as it is and with a valid checksum appended, so the fuzzer reaches the
// parser behind the checksum.
func FuzzDecodeSnapshot(f *testing.F) {
	full := seedSnapshot()
	f.Add(full[:len(full)-snapTrailer])
	capped := seedCappedSnapshot()
	f.Add(capped[:len(capped)-snapTrailer])
	empty := newTable(0, 0).encode()
	f.Add(empty[:len(empty)-snapTrailer])
	f.Add([]byte("ZTLK\x01"))
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzDecode(t, body)
		fuzzDecode(t, binary.BigEndian.AppendUint32(bytes.Clone(body), crc32.ChecksumIEEE(body)))
	})
}

func fuzzDecode(t *testing.T, b []byte) {
	got, err := decodeTable(b)
	if err != nil {
		if !errors.Is(err, errCorrupt) {
			t.Fatalf("error does not match errCorrupt: %v", err)
		}
		return
	}
	checkTable(t, got)
	once := got.encode()
	again, err := decodeTable(once)
	if err != nil {
		t.Fatalf("re-decode: %v", err)
	}
	if !bytes.Equal(again.encode(), once) {
		t.Fatal("encoding is not stable")
	}
}

// FuzzRestore drives Engine.Restore: a snapshot it refuses matches
// ErrCorruptSnapshot, agrees with CheckSnapshot, and leaves the table as
// it was; one it accepts is what the engine then snapshots, stably.
func FuzzRestore(f *testing.F) {
	known := seedSnapshot()
	f.Add(known)
	f.Add(seedCappedSnapshot())
	f.Add(newTable(0, 0).encode())
	f.Add(known[:len(known)-1])
	e, err := NewReplicated(Config{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = e.Close() })
	f.Fuzz(func(t *testing.T, b []byte) {
		ctx := context.Background()
		if err := e.Restore(ctx, known); err != nil {
			t.Fatal(err)
		}
		checkErr := CheckSnapshot(b)
		if err := e.Restore(ctx, b); err != nil {
			if !errors.Is(err, ErrCorruptSnapshot) || !errors.Is(checkErr, ErrCorruptSnapshot) {
				t.Fatalf("Restore = %v, CheckSnapshot = %v; want both to match ErrCorruptSnapshot", err, checkErr)
			}
			if got, err := e.Snapshot(ctx); err != nil || !bytes.Equal(got, known) {
				t.Fatalf("a refused snapshot changed the table (%v)", err)
			}
			return
		}
		if checkErr != nil {
			t.Fatalf("Restore accepted what CheckSnapshot refuses: %v", checkErr)
		}
		once, err := e.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Restore(ctx, once); err != nil {
			t.Fatalf("the engine refuses its own snapshot: %v", err)
		}
		if again, err := e.Snapshot(ctx); err != nil || !bytes.Equal(again, once) {
			t.Fatalf("snapshot after restoring a snapshot differs (%v)", err)
		}
	})
}

// The one grant representation is the table's own: a snapshot's bytes are
// the formats v0.1.0 (version 1, mutexes only) and the shared names'
// (version 2) wrote, byte for byte, taken from the code before it.
func TestSnapshot_BytesAreTheFormatsBefore(t *testing.T) {
	const (
		mutexes = "5a544c4b01000000000000000600000000000f424702016101780000000000000003000000003baa0c40020179000000003b9aca00017a00000000773594000162017800000000000000060000000df8569a4700ce9071ae"
		shared  = "5a544c4b02000000000000000f00000000000f42490501610001780000000000000003000000003baa0c40020179000000003b9aca00017a0000000077359400016200017800000000000000060000000df8569a4700017301020201700000000000000009000000003baa0c48000171000000000000000a00000000b2dfa04800010172000000003b9aca000001760200020171000000000000000e000000003baa0c49000172000000000000000f000000007744d649000001770200010170000000000000000c000000003baa0c4901010171000000003b9aca000067373de7"
	)
	take := func(key, owner string, ttl time.Duration, now int64, fence uint64, c Claim, wait bool) Command {
		return Command{Op: OpAcquireKeys, Keys: []string{key}, Owner: owner, TTL: ttl, Now: now, Fence: fence, Claim: c, Wait: wait}
	}
	sem, read, write := Claim{Kind: Semaphore, Limit: 2}, Claim{Kind: RWLock}, Claim{Kind: RWLock, Write: true}
	cmds := []Command{
		{Op: OpAcquire, Key: "a", Owner: "x", TTL: time.Second, Now: t0, Fence: 3},
		{Op: OpAcquire, Key: "a", Owner: "y", TTL: time.Second, Now: t0, Fence: 4, Wait: true},
		take("a", "z", 2*time.Second, t0, 5, Claim{}, true),
		take("b", "x", time.Minute, t0+7, 6, Claim{}, false),
	}
	for _, c := range []struct {
		cmds []Command
		want string
	}{
		{cmds, mutexes},
		{append(cmds,
			take("s", "p", time.Second, t0+8, 9, sem, false),
			take("s", "q", 3*time.Second, t0+8, 10, sem, false),
			take("s", "r", time.Second, t0+8, 11, sem, true),
			take("w", "p", time.Second, t0+9, 12, write, false),
			take("w", "q", time.Second, t0+9, 13, read, true),
			take("v", "q", time.Second, t0+9, 14, read, false),
			take("v", "r", 2*time.Second, t0+9, 15, read, false),
		), shared},
	} {
		e := newReplicated(t, Config{})
		mustApply(t, e, c.cmds...)
		snap, err := e.Snapshot(t.Context())
		if err != nil || hex.EncodeToString(snap) != c.want {
			t.Fatalf("snapshot %x %v\nwant     %s", snap, err, c.want)
		}
		old, _ := hex.DecodeString(c.want)
		n := newReplicated(t, Config{})
		if err := n.Restore(t.Context(), old); err != nil {
			t.Fatalf("Restore of the old bytes: %v", err)
		}
		if again, _ := n.Snapshot(t.Context()); !bytes.Equal(again, old) {
			t.Fatalf("restored and taken again: %x", again)
		}
	}
}
