// Package fsm is the Raft state machine of a lock cluster: it decodes
// committed log entries and applies them to an engine running in replicated
// mode, and it snapshots and restores that state.
//
// # Log entries
//
// An entry is one type byte, one payload-version byte, then the fields of
// that type (see Encode). Type numbers are explicit and never reused. A type
// with IgnorableFlag set may be skipped by a node that does not know it;
// any other unknown type is a decoding error.
//
// A committed entry that does not decode stops the node: ApplyBatch panics
// with a *CorruptEntryError before applying any entry of its batch.
// Skipping it could drop a grant, and the nodes would disagree about who
// holds the lock. Encode refuses every value Decode would refuse, so no
// request can write such an entry; it can only come from damage or from a
// newer version. Snapshot bytes that Restore refuses match
// ErrCorruptSnapshot and leave the state as it was; CheckSnapshot gives
// the same verdict without an FSM.
//
// # Determinism
//
// The FSM never reads a clock: time arrives in each entry (Entry.Now,
// stamped by the leader), and the FSM clock is the largest stamp applied so
// far, so it never goes back. Every grant made by an entry gets the entry's
// Raft index as its fence, or the last fence plus one when that is not
// above every fence issued so far: the second grant of a Batch entry,
// which carries several lock entries applied in order. A committed batch
// of log entries goes to the engine in one Apply call. Beside the engine table the FSM keeps the member map (id ->
// HTTP address, for forwarding to the leader) and the set of queued waiters
// (for the new leader's sweep of waiters nobody waits for any more); both
// are derived from the log only and sorted in snapshots, so nodes that
// applied the same log produce byte-identical snapshots.
//
// # Stale expiry
//
// An expire entry names the grant the leader saw due (key, owner, fence)
// and the engine applies it only if that grant is still there and its
// deadline has passed in FSM time. A proposal from a leader that was paused
// or deposed is therefore a no-op whenever the lock was refreshed or
// re-granted meanwhile.
package fsm
