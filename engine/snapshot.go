package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/zerotal/lock/drivers"
)

// Snapshot format, version 1 (all integers big-endian):
//
//	magic "ZTLK" | version byte | counter u64 | now i64 | keys uvarint
//	per key, in ascending key order:
//	    key str | owner str | fence u64 | deadline i64 | waiters uvarint
//	    per waiter, in queue order: owner str | ttl i64
//	crc32 (IEEE) of everything before it, u32
//
// where str is a uvarint length followed by the bytes. Sorting the keys
// makes the bytes a function of the state alone.
//
// Version 2 is written when the table holds a semaphore or read/write
// lock (so a table of mutexes stays readable by a release that knows only
// version 1). Each key then carries its kind after its name:
//
//	key str | kind byte
//	kind 0 (mutex): as version 1 from owner on
//	kind 1, 2: limit uvarint | holders uvarint
//	    per holder, by fence: owner str | fence u64 | deadline i64 | write byte
//	    waiters uvarint | per waiter, in queue order: owner str | ttl i64 | write byte
//
// Version 3 is written when a grant or a waiter has a cap on total hold
// time (so a table without one keeps its version 1 or 2 bytes). It is
// version 2, followed before the checksum by the caps:
//
//	caps uvarint | per grant with a cap, by fence: fence u64 | cap i64
//	waiter caps uvarint | per waiter with one, by key then queue order:
//	    key str | owner str | max hold i64
//
// A cap pending (a set's that waits, see CapPending) is written as the
// largest i64, a cap no deadline passes, and a waiter's as a max hold of
// CapPending, the same value: a table of a release that reads the value
// as a cap never ends the grant by it.
const (
	snapMagic   = "ZTLK"
	snapVersion = 3
	snapHeader  = len(snapMagic) + 1 + 8 + 8
	snapTrailer = 4
)

// ErrCorruptSnapshot is matched by every error of Restore and
// CheckSnapshot that refuses the snapshot's bytes.
var ErrCorruptSnapshot = errors.New("engine: corrupt snapshot")

// errCorrupt is wrapped by every decoding failure.
var errCorrupt = ErrCorruptSnapshot

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decodeTable parses and checks a snapshot into a new table (no limits
// set). It never returns a partly built table.
func decodeTable(b []byte) (*table, error) {
	if len(b) < snapHeader+1+snapTrailer {
		return nil, fmt.Errorf("%w: %d bytes is too short", errCorrupt, len(b))
	}
	if string(b[:len(snapMagic)]) != snapMagic {
		return nil, fmt.Errorf("%w: not an engine snapshot (bad magic)", errCorrupt)
	}
	version := b[len(snapMagic)]
	if version < 1 || version > snapVersion {
		return nil, fmt.Errorf("%w: unsupported version %d", errCorrupt, version)
	}
	body, sum := b[:len(b)-snapTrailer], binary.BigEndian.Uint32(b[len(b)-snapTrailer:])
	if crc32.ChecksumIEEE(body) != sum {
		return nil, fmt.Errorf("%w: checksum mismatch (truncated or damaged)", errCorrupt)
	}
	d := decoder{b: body[len(snapMagic)+1:]}
	t := newTable(0, 0)
	t.counter = d.u64()
	t.now = int64(d.u64())
	// Each key takes at least 1+1+1+8+8+1 bytes: bound the count by what
	// is left before allocating for it.
	n := d.count(20)
	t.entries = make(map[string]*entry, n)
	t.heap = make([]*entry, 0, n)
	prev := ""
	for i := 0; i < n && d.err == nil; i++ {
		e := &entry{key: d.str(), hidx: -1}
		if version >= 2 {
			if kind := Kind(d.byte()); kind != Mutex {
				d.shared(t, e, kind, prev, i)
				prev = e.key
				continue
			}
		}
		e.first = holder{owner: d.str(), fence: d.u64(), deadline: int64(d.u64())}
		nw := d.count(10)
		if d.err != nil {
			break
		}
		switch {
		case e.key == "":
			d.fail("empty key")
		case i > 0 && e.key <= prev:
			d.fail("keys out of order or repeated")
		case e.first.owner == "":
			d.fail("empty owner for key %q", e.key)
		case e.first.fence == 0 || e.first.fence > t.counter:
			d.fail("fence %d of key %q outside 1..%d", e.first.fence, e.key, t.counter)
		}
		prev = e.key
		if nw > 0 {
			e.queue = &waitQueue{}
		}
		for j := 0; j < nw && d.err == nil; j++ {
			w := waiter{owner: d.str(), ttl: time.Duration(d.u64())}
			switch {
			case d.err != nil:
			case w.owner == "" || w.owner == e.first.owner:
				d.fail("bad waiter owner for key %q", e.key)
			case w.ttl <= 0:
				d.fail("bad waiter ttl for key %q", e.key)
			case e.queue.line.find(w.owner) >= 0:
				d.fail("waiter queued twice for key %q", e.key)
			default:
				e.queue.line.push(w)
			}
		}
		if d.err == nil {
			t.entries[e.key] = e
			t.heapPush(e)
			t.waiting += e.waiters()
			t.claims++
		}
	}
	if version == 3 && d.err == nil {
		d.caps(t)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d unexpected trailing bytes", len(d.b))
	}
	if d.err != nil {
		return nil, d.err
	}
	return t, nil
}

// decoder reads the body; the first failure sticks and later reads return
// zero values.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", errCorrupt, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 1 {
		d.fail("truncated")
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) bool() bool {
	switch d.byte() {
	case 0:
		return false
	case 1:
		return true
	}
	d.fail("bad flag")
	return false
}

func (d *decoder) u64() uint64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 8 {
		d.fail("truncated")
		return 0
	}
	v := binary.BigEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad length")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a count of items that take at least minSize bytes each.
func (d *decoder) count(minSize int) int {
	v := d.uvarint()
	if d.err == nil && v > uint64(len(d.b)/minSize) {
		d.fail("count %d exceeds the remaining %d bytes", v, len(d.b))
		return 0
	}
	return int(v)
}

func (d *decoder) str() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.fail("truncated string")
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// CheckSnapshot reports whether Restore would accept snap, with the error
// Restore would return, without an engine: a node checks its snapshot
// files with it before it starts.
func CheckSnapshot(snap []byte) error {
	_, err := decodeTable(snap)
	return err
}

// shared decodes a semaphore's or read/write lock's holders and waiters
// into e and adds it to t.
func (d *decoder) shared(t *table, e *entry, kind Kind, prev string, i int) {
	q := &waitQueue{kind: kind, limit: uint32(d.uvarint())}
	e.queue = q
	if d.err == nil && checkClaim(Claim{Kind: kind, Limit: q.limit}) != nil {
		d.fail("bad kind %d or limit %d for key %q", kind, q.limit, e.key)
	}
	switch {
	case e.key == "":
		d.fail("empty key")
	case i > 0 && e.key <= prev:
		d.fail("keys out of order or repeated")
	}
	nh := d.count(18)
	seen := map[string]bool{}
	var lastFence uint64
	for j := 0; j < nh && d.err == nil; j++ {
		h := holder{owner: d.str(), fence: d.u64(), deadline: int64(d.u64())}
		write := d.bool()
		switch {
		case d.err != nil:
		case h.owner == "" || seen[h.owner]:
			d.fail("bad or repeated holder for key %q", e.key)
		case h.fence == 0 || h.fence > t.counter || h.fence <= lastFence:
			d.fail("fence %d of key %q out of order or outside 1..%d", h.fence, e.key, t.counter)
		case write && (kind != RWLock || nh != 1):
			d.fail("a writer beside others, or of a semaphore, for key %q", e.key)
		}
		seen[h.owner] = true
		lastFence = h.fence
		q.writer = write
		if d.err == nil {
			e.addHolder(h)
		}
	}
	if d.err == nil && (nh == 0 || nh > drivers.MaxHolders || (kind == Semaphore && uint32(nh) > q.limit)) {
		d.fail("%d holders for key %q", nh, e.key)
	}
	nw := d.count(11)
	for j := 0; j < nw && d.err == nil; j++ {
		w := waiter{owner: d.str(), ttl: time.Duration(d.u64()), write: d.bool()}
		switch {
		case d.err != nil:
		case w.owner == "" || seen[w.owner]:
			d.fail("bad or repeated waiter for key %q", e.key)
		case w.ttl <= 0:
			d.fail("bad waiter ttl for key %q", e.key)
		case kind == Semaphore && w.write:
			d.fail("a semaphore's waiter wants the write side, key %q", e.key)
		}
		seen[w.owner] = true
		if d.err == nil {
			q.line.push(w)
		}
	}
	if d.err != nil {
		return
	}
	t.entries[e.key] = e
	t.heapPush(e)
	t.waiting += q.line.len()
	t.claims += nh + q.line.len()
}

// caps decodes version 3's caps into t: each names a grant or a waiter
// of t, once, in the order Encode writes them, and no grant's deadline is
// past its cap (no refresh ever takes it there).
func (d *decoder) caps(t *table) {
	n := d.count(16)
	if d.err != nil {
		return
	}
	if n > 0 {
		grants := map[uint64]int64{} // fence → deadline
		for _, e := range t.heap {
			for i := range e.holders() {
				grants[e.holder(i).fence] = e.holder(i).deadline
			}
		}
		t.caps = make(map[uint64]int64, n)
		var last uint64
		for j := 0; j < n && d.err == nil; j++ {
			fence, c := d.u64(), int64(d.u64())
			deadline, ok := grants[fence]
			switch {
			case d.err != nil:
			case !ok || fence <= last:
				d.fail("cap of fence %d: no such grant, or out of order", fence)
			case deadline > c:
				d.fail("grant of fence %d: deadline %d past its cap %d", fence, deadline, c)
			default:
				t.caps[fence], last = c, fence
			}
		}
	}
	nw := d.count(11)
	prev, at := "", -1
	for j := 0; j < nw && d.err == nil; j++ {
		key, owner, maxHold := d.str(), d.str(), time.Duration(d.u64())
		if d.err != nil {
			return
		}
		e := t.entries[key]
		i := -1
		if e != nil {
			i = e.waiterIndex(owner)
		}
		switch {
		case i < 0:
			d.fail("cap of a waiter %q of key %q that is not queued", owner, key)
		case key < prev || key == prev && i <= at:
			d.fail("waiter caps out of order at key %q", key)
		case maxHold <= 0:
			d.fail("bad waiter cap for key %q", key)
		default:
			e.queue.line.item(i).maxHold = maxHold
			prev, at = key, i
		}
	}
}
