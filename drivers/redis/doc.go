// Package redis is the lock driver for Redis, on github.com/redis/go-redis/v9.
//
// Open it from a URL (redis:// or rediss:// for TLS, with optional user,
// password and database number), or hand New a client the application
// already has: a plain client, a failover (Sentinel) client or a cluster
// client.
//
//	d, err := redis.Open(ctx, redis.Config{URL: "redis://:secret@localhost:6379/0"})
//	m := lock.New(d)
//
// Importing the package also registers the "redis" driver of lock.Open:
//
//	import _ "github.com/zerotal/lock/drivers/redis"
//
// # Logging
//
// go-redis prints its own messages (a pool that cannot dial, a connection
// with unread data) through one logger per process, on stderr by default,
// whatever the application configured. This package replaces that logger
// when it is initialised with one that forwards each message, at
// slog.LevelWarn with the attribute logger=go-redis, to the Config.Logger
// of the Driver opened last (Open and New); with no Logger, messages are
// discarded. One logger per process cannot tell clients apart, so with
// several Drivers every message goes to one of the loggers the application
// gave, never to stderr behind its back. An application that calls
// redis.SetLogger itself afterwards keeps its own logger.
//
// # What runs on the server
//
// Every operation is one Lua script, which Redis runs atomically: acquire
// (SET NX PX, or a refresh by the same owner) together with the fence;
// compare-and-delete release; compare-and-extend; force release. Exists is
// a single EXISTS. Scripts are sent by SHA and resent in full when the
// server does not know them, after a restart or SCRIPT FLUSH.
//
// A key K is stored as "{K}" (the owner token, with the lock's TTL) and
// "{K}:fence" (the last fence, kept for FenceRetention after the key's last
// new grant, so that Redis holds one per recently used key). A key
// that contains braces is stored under a digest tag instead:
// "{#<hex>}K" and "{#<hex>}K:fence".
//
// # Fences
//
// Each grant gets a fence larger than every earlier one of the same key:
// max(previous fence + 1, the server's clock in microseconds). The clock
// floor keeps fences increasing when the counter is gone (expired after
// FenceRetention, a restart without persistence, a failover to a replica
// that had not received the last writes), as long as the server clocks do
// not step back by FenceRetention or more.
//
// # Batching
//
// A call alone goes straight to a pooled connection. When Config.PipelineAt
// (default 4) or more calls of one Driver are in flight, they are sent in
// shared pipelines instead: the calls that arrive while one pipeline is on
// the wire make up the next, without waiting for more. Redis spends most of
// a small script's cost reading and writing its connection, which a
// pipeline pays once. This uses the client's ordinary Pipeline, so it works
// the same on a client opened from a URL and on one the application hands
// to New (plain, failover or cluster), and leaves nothing behind on it.
//
// # Waiting
//
// A waiting Acquire (drivers.Request.Wait) is pushed, not polled. Every
// release and force release
// publishes on the key's channel "{K}:released"; a driver keeps one pub/sub
// connection for all its waiters, subscribed to the channels of the keys
// they wait for, and queues its waiters per key in arrival order. Only the
// first waiter of a key competes for it. A failed attempt learns how long
// the holder has left, so the waiter also wakes when the lock expires
// without a release; a slow poll (Config.PollInterval) covers messages lost
// while the subscription reconnects. When a process releases a key that its
// own waiters want, and no other process waits for it (the channel has no
// other subscriber), the release hands the key to the first of them in the
// same script, sparing a round trip.
//
// Across processes, whoever reacts first to a release wins; a process whose
// waiters keep handing a key to each other releases it to everyone as soon
// as another process waits for it too.
//
// # Semaphores and read/write locks
//
// Semaphores and read/write locks (drivers.Request.Claim) keep a shared key
// as one hash at the lock's own name: its kind and limit, a field per
// grant and per place in its queue, each operation one script. Only the
// head of the queue is granted, when it fits, so waiting is first come,
// first served across processes; a waiter keeps its place alive with every
// attempt, and the place of a process that died lapses after three
// seconds. The hash expires with its last grant or place. A mutex script
// meets a key of the wrong type and takes nothing (ErrInvalid), also from
// a release of this package that predates shared keys.
//
// # Errors
//
// A Redis that cannot be reached, or answers that it cannot serve
// (READONLY, LOADING, CLUSTERDOWN, OOM, ...), gives errors that match
// drivers.ErrUnavailable, never a plain "not acquired". A driver opened from
// a URL does not retry (go-redis would retry three times with back-off and
// redial five times), so such errors come within milliseconds; the Manager
// decides what to do, and a refresh that cannot reach Redis before the TTL
// runs out ends in the lost-lock error.
//
// # Deployment
//
// Redis replication is asynchronous. When a primary fails, the replica that
// takes over may not have received the latest writes, so a lock granted just
// before the failure can be granted again to someone else while its first
// holder still works: for a while there are two holders. No Redis-based
// lock avoids this (Redlock's multiple independent servers narrow it
// without closing it). Fences are what protect the resource then: pass
// Lock.Fence() to it and have it reject a fence lower than the highest it
// has seen. For locks that must never double-grant, use the cluster driver
// (Raft) instead.
//
// Run the lock database with maxmemory-policy noeviction: under the
// volatile-* policies Redis may evict a held lock's key (it has a TTL), and
// under allkeys-* also the fence counters.
//
// Redis Cluster is supported: a lock's keys share one hash tag, so they
// live in one slot, and the tests run the whole conformance suite on a
// three-node cluster. Pub/sub messages are broadcast to every node, so a
// waiter's subscription may live on any node. The hand-off check above
// counts only the subscribers on the key's own node there, so on a cluster
// a process also releases a key to everyone after 32 hand-offs in a row.
//
// Tested with Redis 7.0.
package redis
