// Package engine is the embedded lock engine: atomic, owner-guarded,
// TTL-bounded locks with fencing tokens and FIFO waiters, in one process.
// It comes as two types over one table and one loop: Engine (New), the
// live engine the in-process driver runs, and Replicated (NewReplicated),
// the deterministic state machine the Raft FSM runs. Each has only the
// calls that make sense for it; both have Get, List, Len, Snapshot,
// Restore and Close.
//
// # Design
//
// The lock table is a plain, deterministic, single-threaded structure: a
// map from key to entry (owner, fence, deadline in unix nanoseconds, and a
// FIFO queue of waiters) plus a min-heap of entries ordered by deadline,
// then key. Every decision — grant, refresh, hand-off, expiry, limits — is
// made there from its arguments and its own state, so it is table-tested
// directly and two tables fed the same calls end up byte-identical.
//
// Every key, whatever its kind, is one entry with one grant
// representation and one admission rule (claim.go): a mutex is the
// exclusive claim of its one slot, a semaphore has Limit slots, a
// read/write lock a slot per reader and an exclusive writer. An entry's
// grants are a heap by deadline whose root, the grant that ends first,
// is inline in the entry (holders.go), so a mutex costs one 64-byte entry
// and the one heap and the one loop serve every kind. The queue is served
// from its head while the head fits; a release or a cancel may let
// several in at once (Result.Handoffs). One acquire (acquire.go) serves
// every claim on 1 to drivers.MaxMultiKeys keys, all or none, with or
// without a wait.
//
// Each engine is ONE goroutine that owns the table. A caller sends a command
// struct carrying a reply channel with room for one answer, selecting on
// the request channel, its context and the engine's done channel; it then
// waits on its reply and its context only (the loop answers everything it
// received before it closes done, and a caller that sent later sees done
// closed right after its send), so callers do not contend on done. Command structs and their channels are pooled, so
// the hot path does not allocate. After one receive the loop drains every
// command already pending and processes them as a batch, then sends the
// answers. When it finds a single command, it yields once first: callers
// woken by the previous batch are usually runnable but not yet run, and
// letting them send turns many round trips into one batch. The request
// channel is never closed; Close signals the loop, which answers every
// queued command and every blocked waiter with drivers.ErrClosed before
// it exits.
//
// # Rules
//
//   - Every operation is owner-guarded: only the holder releases or
//     extends, and a late holder's release is a no-op returning false.
//   - A grant whose deadline has passed counts as free for an acquire,
//     which makes a new grant with a new fence (the queue, if any, stays
//     behind the new holder). Extend never re-grants.
//   - Waiters queue FIFO, once per owner and key; a key is handed to the
//     first waiter on release, force release and expiry, with a new fence
//     and a deadline of the hand-off time plus the waiter's TTL.
//   - A grant asked with a cap on total hold time (MaxHold) ends at its
//     grant time plus MaxHold at the latest: every refresh sets
//     min(now+ttl, cap) and keeps the first grant's cap, and at the cap
//     the grant ends as at any deadline. A waiter's cap starts at its
//     hand-off; a wait for several keys starts it on every key when its
//     last comes, with its TTL: until then the keys it takes, or is
//     handed, have their caps pending. A live wait starts them itself; in
//     a Replicated table the owner's next acquire of the keys with a cap
//     (the set's closing refresh) does, and an acquire with CapPending
//     (the keep-alive while it waits) leaves them pending. The caps are
//     kept beside the entries, by fence (maxhold.go), so a table without
//     one pays nothing for them.
//   - MaxKeys and MaxWaitersPerKey refuse what would exceed them with an
//     error matching drivers.ErrFull (MaxKeys counts each holder and each
//     waiter of a shared name as one); invalid input (empty key or owner,
//     TTL <= 0, a semaphore above MaxHoldersPerKey) gives an error
//     matching drivers.ErrInvalid. A reader beyond MaxHoldersPerKey meets
//     a busy key, as at a full semaphore.
//
// # Fences
//
// One global counter is incremented for every new grant: the acquire of a
// free or expired key, or the hand-off to a waiter. A refresh by the same
// owner keeps its fence. A global counter is strictly increasing per key
// and costs no memory per key.
//
// # Engine: live
//
// Time comes from the Clock (SystemClock by default, FakeClock in tests).
// Each batch reads the clock once and first ends every grant whose deadline
// has passed, so commands never see an expired holder. Between batches a
// single timer is armed for the earliest deadline; when it fires, the loop
// wakes and expires what is due. When a grant ends — release, force
// release or expiry — the first waiter is handed the key inside the loop
// and its blocked AcquireWait returns: no polling. A key with nobody
// waiting is deleted, so memory returns.
//
// # Replicated
//
// A Replicated engine is a deterministic state machine for Raft, changed
// only by Apply: time comes only from Command.Now (engine time is the maximum seen,
// so it never goes backwards), no timer runs, and a grant ends only by
// release, force release, or an OpExpire naming that exact grant (key,
// owner, fence) once its deadline has passed in engine time — a stale
// expiry from a paused former leader is a no-op. A grant past its deadline
// still counts as free for OpAcquire. Waiters are part of the replicated
// state. A grant made by a command takes Command.Fence (the Raft index)
// when it is above every fence issued so far, else the counter plus one
// (several grants carried by one log entry). Due and NextDeadline tell
// the leader what to expire.
//
// # Snapshots
//
// Snapshot encodes the counter, engine time, and every entry with its
// waiters, keys sorted, in a versioned binary format closed by a CRC-32;
// the same state always gives the same bytes. A table writes the oldest
// version that can carry it: 1 for mutexes, 2 with a semaphore or
// read/write lock, 3 while a grant or a waiter has a cap on total hold
// time; Restore reads all three. Restore decodes and checks
// the whole input before it swaps the table inside the loop, so corrupt
// input leaves the engine as it was.
package engine
