// Package rounds is a node's one path into raft: it paces proposals into
// raft's apply channel in rounds, answers each through one future type,
// Proposal, and counts what raft has not answered yet so that a node's
// shutdown can wait for it.
//
// # Group commit
//
// Every commit costs a bolt transaction (two fsyncs) on the leader, then
// one on a follower, before anyone is answered; the rest of the write path
// is arranged so that as many requests as possible share those. The
// leader proposes in rounds, one at a time: while a round is in raft, new
// proposals wait and then go in together (an idle leader proposes at
// once). The lock proposals of a round go in as one fsm.Batch entry (a
// proposal alone keeps a plain entry): raft stores, replicates and hands
// the FSM one entry instead of one per request, and each proposal is
// answered with its own part of the FSM's response. raft's BatchApplyCh
// takes what remains of a round (member entries, several batches) from
// the apply channel as one batch (up to MaxAppendEntries), the followers
// store it in one transaction, and the FSM applies it with one engine
// call; and raft's
// leader loop, which both writes batches and processes commits, is never
// busy writing the next batch when a commit comes in. An acquire that
// will only join a busy key's queue does not start a round: it rides with
// the next one (within 3 ms), so on a contended key the holder's release
// and the next requester's queueing share one commit. A waiting acquire
// whose owner is already queued (a retry) commits nothing. The log store
// keeps the latest entries in memory (raft.LogCache) and bbolt does not
// write its free list (NoFreelistSync); fsync stays on.
//
// Limits: a lone client pays two disk transactions per request, one after
// the other, and one hot key changes hands once per commit, so both
// follow the disk's fsync latency; many clients on distinct keys share
// the fsyncs and are bounded by CPU and round size.
package rounds
