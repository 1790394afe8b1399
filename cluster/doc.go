// Package cluster runs one node of a replicated lock service: hashicorp/raft
// (a raft-wal log by default, or raft-boltdb's, chosen by Config.RaftLog for a
// new data dir; a raft-boltdb stable store; file snapshots; TCP or mutual-TLS
// transport; package raftstore) with the lock FSM of package fsm, and the
// HTTP/JSON API in front of it.
//
// # Requests
//
// Any node accepts any request. The leader serves writes and reads; a
// follower reverse-proxies them, body included, to the leader's HTTP
// address, which it reads from the replicated member map (every leader
// records its own address when it takes over; a joining node sends its
// address with the join). A forwarded request carries a header, and a
// node that receives one while not leading answers 503 rather than
// forwarding again. Status, /metrics, /healthz and /readyz are answered
// locally. The HTTP layer is package httpapi, over the node's lock
// operations (apistore.go): every node, follower or leader, decodes and
// checks a request once before it serves or forwards it, so a bad request
// is refused without a hop.
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
// # Addresses
//
// A node listens on Config.RaftAddr and Config.HTTPAddr and tells the
// others to dial Config.RaftAdvertise and Config.HTTPAdvertise, as etcd's
// listen and advertise URLs or Consul's bind and advertise addresses:
// behind NAT, in a container whose ports are mapped, or with a proxy
// between the nodes, the two differ. The advertised raft address is the
// one the raft configuration lists (a join sends it, and Bootstrap must
// name it); the advertised HTTP address is the one the member map holds,
// which followers forward requests to. A host name stays a name, resolved
// by each peer when it dials. Without RaftAdvertise a node advertises
// RaftAddr, which must then name a host: raft cannot advertise 0.0.0.0
// or ::, and a node listening there refuses to start until told what to
// advertise. Without HTTPAdvertise a node advertises its HTTP listener,
// with an all-interfaces host replaced by the advertised raft host. The
// check that refuses unauthenticated raft on a non-loopback address looks
// at RaftAddr, the address that decides who can connect.
//
// # Shutdown
//
// A leader first transfers leadership; then HTTP requests are cancelled
// and drained (waiting requests answer 503 and leave the queue), pending
// raft operations finish, raft stops and the stores close.
//
// # Where the rest is
//
// The HTTP API, its errors, readiness and the request limits are
// documented in package httpapi; raft's transport, TLS, the raft secret
// and the cluster ID in package peer; the data directory and its checks
// in package raftstore; the metrics in package metrics; how proposals are
// paced into raft (group commit) in package rounds.
package cluster
