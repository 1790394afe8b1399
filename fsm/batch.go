package fsm

import (
	"encoding/binary"
	"fmt"
)

// Batch is the type of a log entry that carries several lock entries. The
// leader writes the proposals of one round as one batch entry: raft then
// stores, replicates and applies one entry instead of many, and the
// per-entry costs (log store record, replication encoding, apply
// bookkeeping) are paid once per round.
//
// The lock entries of a batch are applied in order, exactly as if each
// were its own entry at the batch's index. Fences stay strictly increasing
// per key (they are globally): a grant takes the raft index of its entry
// when that is above every fence issued so far, else the last fence plus
// one, so the second grant of a batch takes the first's plus one (see the
// engine's Fences).
//
// Layout after the type and payload-version bytes: the number of parts
// (uvarint, at least 1, at most MaxBatchParts), then each part as a length
// (uvarint) and the bytes Encode wrote for one lock entry. Member entries
// and batches are never parts.
const Batch EntryType = 18

// MaxBatchParts bounds the parts of one batch entry, so a corrupt count
// fails instead of allocating, and so that one entry stays a reasonable
// size for the log store and replication.
const MaxBatchParts = 1024

// Batchable reports whether an entry Encode wrote may be a part of a
// batch: a lock entry.
func Batchable(b []byte) bool {
	return len(b) > 0 && EntryType(b[0]).known() && EntryType(b[0]) < SetMember
}

// EncodeBatch returns a batch entry carrying parts, each the bytes Encode
// wrote for a lock entry (see Batchable), applied in the order given.
func EncodeBatch(parts [][]byte) ([]byte, error) {
	if len(parts) == 0 || len(parts) > MaxBatchParts {
		return nil, fmt.Errorf("fsm: a batch carries 1 to %d entries, not %d", MaxBatchParts, len(parts))
	}
	size := 2 + binary.MaxVarintLen64
	for i, p := range parts {
		if !Batchable(p) {
			return nil, fmt.Errorf("%w: batch part %d is not a lock entry", ErrUnknownType, i)
		}
		size += binary.MaxVarintLen64 + len(p)
	}
	b := make([]byte, 0, size)
	b = append(b, byte(Batch), payloadVersion)
	b = binary.AppendUvarint(b, uint64(len(parts)))
	for _, p := range parts {
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
	}
	return b, nil
}

// DecodeLog decodes the data of one command entry into the entries it
// carries, in apply order: one for an entry Encode wrote, the parts of a
// batch, none for an unknown ignorable type. Errors are those of Decode;
// a batch is refused whole if any part is.
func DecodeLog(b []byte) ([]Entry, error) {
	if len(b) == 0 || EntryType(b[0]) != Batch {
		e, err := Decode(b)
		if err != nil {
			return nil, err
		}
		if e.Type() == 0 {
			return nil, nil // ignorable
		}
		return []Entry{e}, nil
	}
	if len(b) < 2 || b[1] != payloadVersion {
		return nil, fmt.Errorf("%w: batch without payload version %d", ErrMalformed, payloadVersion)
	}
	r := reader{b: b[2:]}
	n := r.uvarint("batch count")
	if r.err == nil && (n == 0 || n > MaxBatchParts) {
		r.fail("batch count", fmt.Sprintf("%d, want 1 to %d", n, MaxBatchParts))
	}
	if r.err != nil {
		return nil, r.err
	}
	entries := make([]Entry, 0, n)
	for i := uint64(0); i < n; i++ {
		size := r.uvarint("batch part length")
		if r.err != nil {
			return nil, r.err
		}
		if size > uint64(len(r.b)) {
			return nil, fmt.Errorf("%w: batch part %d: length %d past the end (%d bytes left)", ErrMalformed, i, size, len(r.b))
		}
		part := r.b[:size]
		r.b = r.b[size:]
		if !Batchable(part) {
			return nil, fmt.Errorf("%w: batch part %d is not a lock entry", ErrMalformed, i)
		}
		e, err := Decode(part)
		if err != nil {
			return nil, fmt.Errorf("batch part %d: %w", i, err)
		}
		entries = append(entries, e)
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes after a batch", ErrMalformed, len(r.b))
	}
	return entries, nil
}
