package fsm

import "fmt"

// CorruptEntryError is the value the FSM panics with when a committed log
// entry does not decode: its bytes were damaged on disk or in transit, or
// a newer version wrote a type this one does not know and may not skip.
//
// Skipping the entry instead would be silent data loss: if it was a
// grant, this node would believe the key free while the others hold it,
// and a later leader elected from this node would grant it twice. So the
// node stops with this message, as etcd does on a corrupt WAL record. The
// operator then replaces the node's data directory (the node catches up
// from the leader's snapshot) or upgrades the binary.
//
// Entries are only ever written by Encode, which refuses what Decode
// would refuse, so no client request can produce one.
type CorruptEntryError struct {
	Index uint64 // raft index of the entry
	Term  uint64 // raft term of the entry
	Err   error  // matches ErrMalformed or ErrUnknownType
}

func (e *CorruptEntryError) Error() string {
	return fmt.Sprintf("fsm: committed log entry %d (term %d) cannot be applied: %v; "+
		"the node stops rather than skip it: replace this node's data directory, or upgrade it if a newer version wrote the entry",
		e.Index, e.Term, e.Err)
}

func (e *CorruptEntryError) Unwrap() error { return e.Err }
