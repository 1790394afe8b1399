// Package httpapi is the HTTP API of a lock cluster node: the routes of
// package api's wire schema, the bearer-token and cluster-ID checks, the
// deadline on request bodies, the one decode and field checks of every
// request, the one map from errors to statuses, the cap on waiting
// acquires, the connection cap, and the forwarding of requests to the
// leader by a node that does not lead.
//
// It serves a Store, which it declares itself: the node's lock
// operations with plain, already checked arguments. It knows nothing of
// consensus (it imports neither raft nor the node's state machine), so
// it is tested, and fuzzed, against an in-memory Store.
//
// # HTTP API
//
// JSON bodies (the types of package api, which the Go client shares),
// durations in milliseconds, keys in bodies or query parameters (never in
// paths); a missing wait_ms means no wait. Bodies over 64 KiB are refused
// (413) and unknown fields are an error (400). With Options.Credentials
// set, every request but GET /healthz, GET /readyz and GET /v1/node needs
// a credential the node knows ("Authorization: Bearer <token>", or a
// verified TLS client certificate the token file names): 401 otherwise.
// A credential without the right a route needs (package access: lock,
// status, force-release, membership, debug, metrics), or for a key
// outside its prefixes, is answered 403 forbidden, naming the right.
//
//	POST /v1/acquire        {"key"|"keys","owner","ttl_ms","wait_ms","keep_ms","semaphore"|"mode","max_hold_ms"}
//	                                                           -> {"key","owner","fence","ttl_ms"[,"locks"]}
//	                        (keys: all or none, in one entry; 501 unsupported for keys, a
//	                        shared claim or a cap while a member cannot apply them)
//	POST /v1/release        {"key","owner"}                    -> {"released"}
//	POST /v1/extend         {"key","owner","ttl_ms"}           -> {"extended","ttl_ms"}
//	POST /v1/force-release  {"key"}                            -> {"released"}
//	GET  /v1/lock?key=K                                        -> {"key","owner","fence","remaining_ms","waiters"}
//	                        (a shared key adds "kind","limit","holders","queue")
//	GET  /v1/locks?prefix=P&limit=N&holder=H                   -> {"locks":[...],"truncated","edges","cycles"}
//	                        (edges: who waits for whom, api.WaitsFor; holder=H keeps the keys H holds or waits for)
//	GET  /v1/status                                            -> raft state, leader, indexes, peers, keys, version
//	POST /v1/join           {"id","addr","http"}               -> {} (409 join_refused: the node has raft state, ...)
//	GET  /v1/node                                              -> {"id","cluster_id","membership","last_index","servers","features"}
//	POST /v1/leave          {"id"}                             -> {} (404 for an id that is no member)
//	GET  /readyz                                               -> {"ready","state","reason"} (200 or 503)
//	GET  /metrics, GET /healthz
//	GET  /debug/...                                            -> Options.Debug, when set (lockcluster --pprof)
//	GET  /ui?prefix=P&holder=H, GET /ui/events, POST /ui/force-release
//	                        the live lock page (ui.go): HTML, signed in with a token as the
//	                        HTTP Basic password, a bearer token or a client certificate
//	GET  /v1/stream         Connection: Upgrade                -> 101, then the API stream (package api/stream)
//
// A wait counts from the request's arrival, and a wait that runs out is
// answered 409 at once (its queue place is given up just after; an
// set of keys gives back the keys it took first). keep_ms keeps the place
// that long after the wait runs out (at most api.MaxKeepMillis) for the
// owner's next request, which then waits on it again: a client that
// waits in chunks asks it of every chunk but the last, and its wait stays
// first come first served. With no next request the place is given up
// once keep_ms has passed; a hand-off made meanwhile is released then.
// The places kept are counted per credential (Wait.Tenant), an
// set's once: one credential's flood of kept places gives up its
// own beyond the node's bound (1,024 a credential), never another's.
//
// On a node with credentials the owner a request names is recorded with
// its credential (owners.go): a release or an extend reaches the grants
// of its own credential only, whatever owner token it names, and GET
// /v1/lock and /v1/locks show an owner's token only to the credential
// that made the grant and to an operator. Others see who holds it (the
// holder after the token), the token as zeros.
//
// The stream carries any number of the requests above over one
// connection, for the Go client: a frame holds a request's method, path
// and body, and is served by the very handler that serves plain requests,
// with the token and cluster ID of the upgrade, so every check, answer
// and forward is the same. A stream holds at most MaxStreamRequests
// requests in progress (one more is answered 429), a frame must arrive
// whole within ReadTimeout of its first byte, a stream with nothing in
// progress closes after IdleTimeout, and a malformed frame closes it.
// Cancelling a request, or closing the stream, ends its context as
// closing a plain connection does. Options.Streams counts the streams,
// which the HTTP server stops tracking once it hands their connections
// over.
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
// # Limits
//
// Key (1024 bytes) and owner (1024 bytes) lengths, TTL (1ms to 7 days),
// wait (capped at MaxWait) and body size (64 KiB, 413) are checked at the
// API. The replicated table holds at most MaxKeys locks (default 100,000)
// and MaxWaitersPerKey waiters per key (default 1,000); beyond them an
// acquire is answered 429 "full". Each node holds at most MaxWaits
// waiting requests open at once (default 4,096, forwarded ones included:
// waiting acquires, watches of a key and the lock page's event streams),
// since each costs a goroutine and a socket (and at most MaxConns
// connections, default 8,192, with HTTPReadTimeout, default 10s, to send
// a request's headers and again its body: a client that trickles is
// answered 408 and disconnected); beyond it a waiting acquire
// is answered 429 "full" with Retry-After at once, while acquires without
// a wait and releases still pass. There is no per-client rate limit: the
// cluster knows clients only by one shared token, the caps above bound
// memory whatever the rate, and group commit absorbs bursts; a proxy in
// front is the place for per-client quotas.
package httpapi
