// Package cluster runs one node of a replicated lock service: hashicorp/raft
// (raft-boltdb log and stable store, file snapshots, TCP or mutual-TLS transport) with the
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
// forwarding again. Status, /metrics, /healthz and /readyz are answered
// locally. The HTTP layer is package httpapi, over the node's lock
// operations (store.go): every node, follower or leader, decodes and
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
// # HTTP API
//
// JSON bodies (the types of package api, which the Go client shares),
// durations in milliseconds, keys in bodies or query parameters (never in
// paths); a missing wait_ms means no wait. Bodies over 64 KiB are refused
// (413) and unknown fields are an error (400). With Config.Token set,
// every request but GET /healthz and GET /readyz needs "Authorization:
// Bearer <token>" (401 otherwise).
//
//	POST /v1/acquire        {"key","owner","ttl_ms","wait_ms"} -> {"key","owner","fence","ttl_ms"}
//	POST /v1/release        {"key","owner"}                    -> {"released"}
//	POST /v1/extend         {"key","owner","ttl_ms"}           -> {"extended","ttl_ms"}
//	POST /v1/force-release  {"key"}                            -> {"released"}
//	GET  /v1/lock?key=K                                        -> {"key","owner","fence","remaining_ms","waiters"}
//	GET  /v1/locks?prefix=P&limit=N                            -> {"locks":[...],"truncated"}
//	GET  /v1/status                                            -> raft state, leader, indexes, peers, keys, version
//	POST /v1/join           {"id","addr"[,"http"]}             -> {}
//	POST /v1/leave          {"id"}                             -> {} (404 for an id that is no member)
//	GET  /readyz                                               -> {"ready","state","reason"} (200 or 503)
//	GET  /metrics, GET /healthz
//
// Every error is {"code","message"} with code invalid (400, naming the
// field or query parameter at fault), unauthorized (401), wrong_cluster
// (403), not_found (404: no such lock, or leave of an unknown member),
// not_acquired (409, with "holder_ttl_ms" when known), too_large (413),
// full (429) or unavailable (503: no leader, no quorum, leadership moved,
// shutting down; safe to retry elsewhere); one function, classify in
// package httpapi, maps errors to them.
//
// # Readiness
//
// GET /healthz answers 200 "ok" while the process serves HTTP: a liveness
// probe. GET /readyz answers 200 when the node can serve requests now,
// else 503, both with {"ready","state","reason"}:
//
//   - a leader is ready once its takeover is done. raft steps a leader
//     down when it has not heard from a majority of the voters within
//     LeaderLeaseTimeout (checked at least that often), so a leader has a
//     reachable quorum, or stops being ready within about twice the lease.
//   - a follower is ready when it knows a leader, heard from it within the
//     last HeartbeatTimeout (a leader sends heartbeats ten times as often;
//     raft itself starts an election after one to two timeouts of
//     silence), and knows the leader's HTTP address to forward to. A
//     leader in touch with a follower has its quorum, by the rule above.
//   - a candidate, a node without a leader and a node shutting down are
//     not ready.
//
// The reason says which: "no leader", "no leader: election in progress",
// "leader n1 not heard from for 3.2s", "leader is still taking over",
// "shutting down". Like /healthz it needs no token and checks no cluster
// ID: load balancers and orchestrators' probes ask it. Route traffic by
// /readyz, restart by /healthz: a node cut off with a minority is not
// mended by a restart. zerotal_lock_ready exports the same answer.
//
// # Security
//
// Config.Token is compared as SHA-256 digests in constant time. It, and
// URLs with credentials, never appear in logs or errors.
//
// Config.TLS (cert, key, CA; optionally RequireClientCert) serves the API
// over https and runs raft over mutual TLS: a raft peer must present a
// certificate signed by the CA whether or not API clients must. Node-to-node HTTP (join, forwarding) uses https and
// presents the node's certificate, so node certificates are valid for
// server and client auth and name the node's advertised raft and HTTP
// hosts (a peer checks the name it dialled). Members
// publish host:port only; every node of a cluster uses TLS or none. Use a
// CA dedicated to the cluster: any certificate it signs is a valid peer.
// A renewed node certificate (its files replaced) is used from the next
// handshake on, within a second; a new CA needs a restart.
//
// Config.RaftSecret (else Config.Token) authenticates raft without TLS:
// every raft connection opens with a challenge-response in which both
// ends prove they know the secret without sending it (HMAC-SHA256 over
// both nonces, the cluster ID and the direction), so a process without it
// cannot append entries, vote or raise the term. It authenticates who
// opened a connection, not the bytes after it: against a machine on the
// network path that can rewrite traffic, use TLS. A node refuses to start
// with raft on a non-loopback address and neither TLS nor a secret, unless
// Config.RaftInsecure says so.
//
// Config.ClusterID (default "lockcluster") is stored in the data dir's
// stable store on first start. A node refuses to start on a data dir that
// holds raft state of another cluster, a join names the ID and a member of
// another cluster refuses it (403 wrong_cluster, not retried), every raft
// connection opens with a handshake naming it (a peer of another cluster
// is dropped and logged), and a request that carries X-Lock-Cluster-Id
// with another ID is refused with 403.
//
// # Limits
//
// Key (1024 bytes) and owner (1024 bytes) lengths, TTL (1ms to 7 days),
// wait (capped at MaxWait) and body size (64 KiB, 413) are checked at the
// API. The replicated table holds at most MaxKeys locks (default 100,000)
// and MaxWaitersPerKey waiters per key (default 1,000); beyond them an
// acquire is answered 429 "full". Each node holds at most MaxWaits
// waiting requests open at once (default 4,096, forwarded ones included),
// since each costs a goroutine and a socket (and at most MaxConns
// connections, default 8,192, with HTTPReadTimeout, default 10s, to send
// a request's headers and again its body: a client that trickles is
// answered 408 and disconnected); beyond it a waiting acquire
// is answered 429 "full" with Retry-After at once, while acquires without
// a wait and releases still pass. There is no per-client rate limit: the
// cluster knows clients only by one shared token, the caps above bound
// memory whatever the rate, and group commit absorbs bursts; a proxy in
// front is the place for per-client quotas.
//
// # Metrics
//
// Labelled node=<ID>: zerotal_lock_acquire_wait_seconds (request to grant
// on the leader), zerotal_lock_hold_seconds (grant to release or expiry,
// in replicated time), zerotal_lock_contention_total (acquires answered
// 409), zerotal_lock_expired_total (expiries applied),
// zerotal_lock_waiters (queued waiters), zerotal_lock_keys,
// zerotal_lock_raft_state (0 follower, 1 candidate, 2 leader, 3 shutdown),
// zerotal_lock_leadership_changes_total, and zerotal_lock_build_info, a
// constant 1 labelled with the build's version, revision and goversion.
//
// Raft, read from the node's raft when scraped and labelled node=<ID>
// too: zerotal_lock_raft_term, zerotal_lock_raft_last_log_index,
// zerotal_lock_raft_commit_index, zerotal_lock_raft_applied_index,
// zerotal_lock_raft_fsm_pending (committed batches queued for the FSM),
// zerotal_lock_raft_last_snapshot_index, zerotal_lock_raft_voters,
// zerotal_lock_raft_last_contact_seconds (since a follower last heard
// from its leader; 0 on the leader) and zerotal_lock_ready (1 when
// /readyz answers 200). raft's own go-metrics are not exported: their
// sink is global to the process, where several nodes may run.
//
// With a registry of its own (Config.Registry nil) a node also serves the
// Go runtime's go_* and the process's process_* series, unlabelled. A
// registry passed in is the caller's to equip with those
// (prometheus.DefaultRegisterer has them already).
//
// # Shutdown
//
// A leader first transfers leadership; then HTTP requests are cancelled
// and drained (waiting requests answer 503 and leave the queue), pending
// raft operations finish, raft stops and the stores close.
//
// # Group commit
//
// Every commit costs a bolt transaction (two fsyncs) on the leader, then
// one on a follower, before anyone is answered; the rest of the write path
// is arranged so that as many requests as possible share those. The
// leader proposes in rounds, one at a time: while a round is in raft, new
// proposals wait and then go in together (an idle leader proposes at
// once). raft's BatchApplyCh takes a round from the apply channel as one
// batch (up to MaxAppendEntries), the followers store it in one
// transaction, and the FSM applies it with one engine call; and raft's
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
package cluster
