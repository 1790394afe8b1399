package engine

import (
	"encoding/binary"
	"hash/crc32"
	"maps"
	"slices"
	"strings"
)

// Frozen is the lock table as it stood at one instant, copied out of the
// loop so that it can be encoded elsewhere. Freezing is a copy of the
// entries in whatever order the table keeps them; sorting and encoding,
// the larger part of a snapshot's cost, happen in Encode, on the caller's
// goroutine, while the loop serves commands again. At a million held
// locks that keeps the loop's pause to the copy (BenchmarkScaleHeld).
type Frozen struct {
	counter uint64
	now     int64
	shared  bool // some entry is a semaphore or read/write lock: version 2
	entries []frozenEntry
	caps    map[uint64]int64 // the grants' caps on total hold time: version 3
	capped  bool             // some grant or waiter has a cap: version 3
}

// frozenEntry is one key's state. Strings are shared with the table (they
// are immutable); the queue is a copy, made only for a key that has one
// (most have none, and the copy of a million keys is the loop's pause).
type frozenEntry struct {
	key   string
	first holder
	q     *frozenQueue
}

type frozenQueue struct {
	kind    Kind
	limit   uint32
	writer  bool
	waiters []waiter // tags cleared: the loop's blocked callers stay in the loop
	holders []holder // every grant, first included
}

func (fe *frozenEntry) waiters() []waiter {
	if fe.q == nil {
		return nil
	}
	return fe.q.waiters
}

// freeze copies the table out.
func (t *table) freeze() *Frozen {
	f := &Frozen{counter: t.counter, now: t.now, entries: make([]frozenEntry, len(t.heap))}
	if len(t.caps) > 0 {
		f.caps, f.capped = maps.Clone(t.caps), true
	}
	for i, e := range t.heap {
		fe := &f.entries[i]
		fe.key, fe.first = e.key, e.first
		if e.queue == nil {
			continue
		}
		q := e.queue
		fq := &frozenQueue{kind: q.kind, limit: q.limit, writer: q.writer}
		if n := q.line.len(); n > 0 {
			fq.waiters = make([]waiter, 0, n)
			for w := range q.line.all() {
				fq.waiters = append(fq.waiters, waiter{owner: w.owner, ttl: w.ttl, maxHold: w.maxHold, write: w.write})
				f.capped = f.capped || w.maxHold > 0
			}
		}
		if q.kind != Mutex {
			f.shared = true
			fq.holders = append([]holder{e.first}, q.rest...) // Encode puts them in fence order
		}
		fe.q = fq
	}
	return f
}

// Len is the number of keys frozen.
func (f *Frozen) Len() int { return len(f.entries) }

// Encode returns the snapshot's bytes (the format is in snapshot.go): the
// same state always gives the same bytes. It sorts f's entries in place;
// it is safe to call more than once, but not concurrently.
func (f *Frozen) Encode() []byte {
	slices.SortFunc(f.entries, func(a, b frozenEntry) int { return strings.Compare(a.key, b.key) })
	for i := range f.entries {
		if q := f.entries[i].q; q != nil {
			slices.SortFunc(q.holders, func(a, b holder) int { return cmpFence(a.fence, b.fence) })
		}
	}
	size := snapHeader + binary.MaxVarintLen64 + snapTrailer
	for i := range f.entries {
		fe := &f.entries[i]
		size += 3*binary.MaxVarintLen64 + 1 + len(fe.key) + len(fe.first.owner) + 8 + 8
		if fe.q == nil {
			continue
		}
		for _, w := range fe.q.waiters {
			size += binary.MaxVarintLen64 + len(w.owner) + 8 + 1
		}
		for _, h := range fe.q.holders {
			size += binary.MaxVarintLen64 + len(h.owner) + 8 + 8 + 1
		}
	}
	version := byte(1)
	switch {
	case f.capped:
		version = 3
	case f.shared:
		version = 2
	}
	b := make([]byte, 0, size)
	b = append(b, snapMagic...)
	b = append(b, version)
	b = binary.BigEndian.AppendUint64(b, f.counter)
	b = binary.BigEndian.AppendUint64(b, uint64(f.now))
	b = binary.AppendUvarint(b, uint64(len(f.entries)))
	for i := range f.entries {
		fe := &f.entries[i]
		b = appendString(b, fe.key)
		if version >= 2 {
			if fe.q == nil || fe.q.kind == Mutex {
				b = append(b, byte(Mutex))
			} else {
				b = append(b, byte(fe.q.kind))
				b = appendShared(b, fe.q)
				continue
			}
		}
		b = appendString(b, fe.first.owner)
		b = binary.BigEndian.AppendUint64(b, fe.first.fence)
		b = binary.BigEndian.AppendUint64(b, uint64(fe.first.deadline))
		b = binary.AppendUvarint(b, uint64(len(fe.waiters())))
		for _, w := range fe.waiters() {
			b = appendString(b, w.owner)
			b = binary.BigEndian.AppendUint64(b, uint64(w.ttl))
		}
	}
	if version == 3 {
		b = f.appendCaps(b)
	}
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

func appendShared(b []byte, fq *frozenQueue) []byte {
	b = binary.AppendUvarint(b, uint64(fq.limit))
	b = binary.AppendUvarint(b, uint64(len(fq.holders)))
	for _, h := range fq.holders {
		b = appendString(b, h.owner)
		b = binary.BigEndian.AppendUint64(b, h.fence)
		b = binary.BigEndian.AppendUint64(b, uint64(h.deadline))
		b = appendBool(b, fq.writer)
	}
	b = binary.AppendUvarint(b, uint64(len(fq.waiters)))
	for _, w := range fq.waiters {
		b = appendString(b, w.owner)
		b = binary.BigEndian.AppendUint64(b, uint64(w.ttl))
		b = appendBool(b, w.write)
	}
	return b
}

// appendCaps writes version 3's caps: the grants' by fence, then the
// waiters' by key (f's entries are sorted) and queue order.
func (f *Frozen) appendCaps(b []byte) []byte {
	fences := slices.Sorted(maps.Keys(f.caps))
	b = binary.AppendUvarint(b, uint64(len(fences)))
	for _, fence := range fences {
		b = binary.BigEndian.AppendUint64(b, fence)
		b = binary.BigEndian.AppendUint64(b, uint64(f.caps[fence]))
	}
	n := 0
	for i := range f.entries {
		for _, w := range f.entries[i].waiters() {
			if w.maxHold > 0 {
				n++
			}
		}
	}
	b = binary.AppendUvarint(b, uint64(n))
	for i := range f.entries {
		for _, w := range f.entries[i].waiters() {
			if w.maxHold > 0 {
				b = appendString(b, f.entries[i].key)
				b = appendString(b, w.owner)
				b = binary.BigEndian.AppendUint64(b, uint64(w.maxHold))
			}
		}
	}
	return b
}

// encode is the table's snapshot, frozen and encoded at once (tests and
// the loop's own use).
func (t *table) encode() []byte { return t.freeze().Encode() }
