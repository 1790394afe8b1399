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
// (of one key or of a set, with its fences and, for a request that waits,
// its places in the queues), release, extend, force release, exists,
// inspect. Scripts are sent by SHA and resent in full when the server does
// not know them, after a restart or SCRIPT FLUSH.
//
// Every claim has one data model. A key K is stored as the hash "{K}" (a
// field per grant, the claim when it is not a mutex, and a mark while
// anyone may be queued), the queue "{K}:q" (a sorted set of the waiting
// owners in their order) with their places "{K}:w" (a hash), and
// "{K}:fence" (the last fence, kept for
// FenceRetention after the key's last new grant, so that Redis holds one
// per recently used key). A mutex is the exclusive claim of one slot; a
// semaphore has limit slots; a read/write lock one writer or up to
// drivers.MaxHolders readers. The grants expire with the last of them and
// the queue with its last place, so an acquire of a free key nobody waits
// for creates "{K}" and a release with nobody waiting deletes it, without
// reading a queue; a step of a contended key reads the head of its queue
// only. A key that contains braces is stored under a digest tag instead:
// "{#<hex>}K", "{#<hex>}K:q" and so on.
//
// A grant made with a cap on its total hold time (drivers.Request.MaxHold)
// records the cap beside its deadline, and only such a grant does: the
// cap is fixed by the script that grants (an acquire, or a release that
// lets a waiter in, whose cap counts from then), no refresh, by Extend or
// by the owner's acquire, sets a deadline past it, and at the cap the
// grant lapses like any other and the next waiter comes in.
//
// A release of v0.1.0 stores a mutex as the string "{K}" (the owner, with
// the lock's TTL): this release sees such a key as held by its owner and
// waits for it to go without a place in its queue, and v0.1.0 meets a hash
// and takes nothing (its acquire fails with a WRONGTYPE error), so
// processes of the two releases sharing one Redis exclude each other.
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
// Every claim waits the same way, first come, first served across
// processes: a request that cannot be granted takes a place at the back of
// the key's queue in Redis, and only the head is let in, when it fits. A
// release lets the waiters in that now fit in the same script and names
// them on the key's channel "{K}:released"; a driver keeps one pub/sub
// connection for all its waiters, subscribed to the channels of the keys
// they wait for, and wakes exactly the waiters named, whose next attempt
// takes the grant up. A release by the process of the waiter let in hands
// it the grant without a message or another round trip. A set of keys
// waits in one script too: it takes the keys that are free and queues for
// the busy ones in one step, so it never overtakes an earlier request on
// any key.
//
// A waiter keeps its place alive with every attempt (at least every third
// of three seconds), and the head also tries when the grant in its way
// would end; a slow poll (Config.PollInterval) covers messages lost while
// the subscription reconnects. The place of a process that died lapses
// after three seconds, and so does a grant a release made to it before its
// next attempt took it up: a waiter killed in the queue holds it up for
// three seconds at most, whatever its TTL.
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
// waiter's subscription may live on any node. A set of keys is taken in
// one script only when its keys share a slot; otherwise Acquire answers
// drivers.ErrUnsupported, having taken nothing, and the Manager takes them,
// or waits for them, one at a time.
//
// Tested with Redis 7.0.
package redis
