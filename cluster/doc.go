// Package cluster runs one node of a replicated lock service: hashicorp/raft
// (raft-boltdb log and stable store, file snapshots, TCP transport) with the
// lock FSM of package fsm, and the HTTP/JSON API in front of it.
//
// # Requests
//
// Any node accepts any request. The leader serves writes and reads; a
// follower reverse-proxies them, body included, to the leader's HTTP
// address, which it reads from the replicated member map (every leader
// records its own address when it takes over; a joining node sends its
// address with the join). A forwarded request carries a header, and a
// node that receives one while not leading answers 503 rather than
// forwarding again. Status, /metrics and /healthz are answered locally.
//
// Reads (GET /v1/lock, /v1/locks) are linearizable by ReadIndex: the
// leader notes its commit index, confirms it still leads with a round of
// heartbeats (VerifyLeader), waits until its FSM has applied that index,
// then reads its own table. No log entry is written for a read.
//
// # Time
//
// Every command carries a time stamped by the leader, and the FSM clock is
// the largest stamp applied. A new leader first commits a barrier, reads
// the FSM clock t0 and its own monotonic clock m0, and stamps
// t0 + max(0, elapsed since m0 - grace) with grace = election timeout +
// leader lease: the time between the old leader's last entry and the
// takeover is not counted, so a holder's remaining TTL may grow across a
// leader change but never shrinks, and is never reset to the full TTL.
// Wall clocks of different nodes are never compared. While locks are held
// the leader commits a time-only tick every TickInterval, so the next
// leader starts from a recent clock.
//
// # Expiry
//
// Only the leader expires locks: a loop sleeps until the earliest deadline
// and proposes one expire entry per due grant, naming (key, owner, fence).
// The FSM applies it only if that grant is still there and its deadline
// has passed in FSM time, so a stale proposal (a paused or deposed leader)
// is a no-op.
//
// # Waiting
//
// An acquire with wait_ms that finds the key busy is committed as a queued
// waiter in the replicated table; the leader keeps the HTTP request open
// and answers when the FSM reports the hand-off (release, force release
// and expiry hand the key to the next waiter in the same entry, whose
// index is the new fence). On timeout the leader commits a cancel; if the
// hand-off won that race it commits a release, passing the key on.
// When leadership changes, waiting requests are answered 503 (the client
// retries), and the new leader cancels, during its takeover, every waiter
// still queued: nobody waits for them any more, and a cancel never removes
// a grant. A waiter that was granted just before the change keeps its
// lock until it is released or its TTL ends.
//
// # Group commit
//
// raft's BatchApplyCh takes concurrent proposals from the apply channel in
// batches (up to MaxAppendEntries, one fsync), and the FSM applies each
// committed batch with one engine call.
package cluster
