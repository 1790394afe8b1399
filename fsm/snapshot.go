package fsm

import (
	"encoding/binary"
	"fmt"
	"io"
	"sort"

	"github.com/zerotal/lock/engine"
)

// snapshotVersion is the first byte of a snapshot. The layout after it:
// applied index (uvarint), FSM time (varint), members sorted by id (count,
// then id and HTTP address), queued waiters sorted by key then owner
// (count, then key and owner), and the engine's own snapshot (length,
// bytes). Sorting makes equal states give equal bytes on every node. The
// waiters are the engine's (they are in its snapshot too); they are
// written for the format's sake and skipped on restore.
const snapshotVersion = 1

// maxSnapshotItems bounds the counts read from a snapshot header, so a
// corrupt count fails instead of allocating.
const maxSnapshotItems = 1 << 28

func encodeSnapshot(st *state, ws []Waiter, engSnap []byte) []byte {
	ids := make([]string, 0, len(st.members))
	for id := range st.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	b := make([]byte, 0, 32+len(engSnap)+64*len(ids)+64*len(ws))
	b = append(b, snapshotVersion)
	b = binary.AppendUvarint(b, st.applied)
	b = binary.AppendVarint(b, st.now)
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		b = appendString(b, id)
		b = appendString(b, st.members[id])
	}
	b = binary.AppendUvarint(b, uint64(len(ws)))
	for _, w := range ws {
		b = appendString(b, w.Key)
		b = appendString(b, w.Owner)
	}
	b = binary.AppendUvarint(b, uint64(len(engSnap)))
	return append(b, engSnap...)
}

func decodeSnapshot(b []byte) (state, []byte, error) {
	if len(b) == 0 {
		return state{}, nil, fmt.Errorf("%w: empty", ErrCorruptSnapshot)
	}
	if b[0] != snapshotVersion {
		return state{}, nil, fmt.Errorf("%w: format version %d, want %d", ErrCorruptSnapshot, b[0], snapshotVersion)
	}
	r := reader{b: b[1:], kind: ErrCorruptSnapshot}
	st := newState()
	st.applied = r.uvarint("applied index")
	st.now = r.varint("time")
	n := r.uvarint("member count")
	for i := uint64(0); i < n && r.err == nil; i++ {
		if n > maxSnapshotItems {
			r.fail("member count", "too large")
			break
		}
		id := r.str("member id", maxMemberLen)
		st.members[id] = r.str("member http address", maxMemberLen)
	}
	n = r.uvarint("waiter count")
	for i := uint64(0); i < n && r.err == nil; i++ {
		if n > maxSnapshotItems {
			r.fail("waiter count", "too large")
			break
		}
		r.str("waiter key", maxKeyLen)
		r.str("waiter owner", maxOwnerLen)
	}
	n = r.uvarint("engine snapshot length")
	if r.err == nil && uint64(len(r.b)) != n {
		r.fail("engine snapshot", fmt.Sprintf("length %d, have %d bytes", n, len(r.b)))
	}
	if r.err != nil {
		return state{}, nil, r.err
	}
	return st, r.b, nil
}

// CheckSnapshot reads a snapshot as Restore would and returns the error
// Restore would return, without changing any FSM: a node checks its
// snapshot files with it before raft starts, so that a damaged one is a
// start-up error that names the file rather than a line in raft's log.
func CheckSnapshot(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("fsm: read snapshot: %w", err)
	}
	_, engSnap, err := decodeSnapshot(b)
	if err != nil {
		return err
	}
	if err := engine.CheckSnapshot(engSnap); err != nil {
		return fmt.Errorf("%w: %w", ErrCorruptSnapshot, err)
	}
	return nil
}
