// Package lock is the portable API for distributed locks: atomic,
// owner-guarded, TTL-bounded locks over any backend that implements the
// driver contract of package drivers (in-process, SQLite, Redis, or a Raft
// cluster).
//
// A Manager wraps one driver. Most programs need only Manager.Try (acquire
// once or fail fast) and Manager.Block (wait up to a timeout); both run a
// callback while the lock is held and always release it afterwards, also
// when the callback returns an error or panics:
//
//	m, err := lock.Open(ctx, lock.Config{}) // the in-process driver
//	...
//	err = m.Try(ctx, "invoice:123", 10*time.Second, func(ctx context.Context, l *lock.Lock) error {
//		return processInvoice(ctx, 123, l.Fence())
//	})
//	if errors.Is(err, lock.ErrNotAcquired) {
//		// someone else is processing invoice 123
//	}
//
// # Drivers: import the one you use
//
// The memory driver is always there. The others register themselves with
// Open when their package is imported, as database/sql drivers do, so that
// a program links only the backends it uses (a program on the memory
// driver carries no SQLite, Redis client, cluster client or Raft):
//
//	import (
//		"github.com/zerotal/lock"
//		_ "github.com/zerotal/lock/drivers/sqlite" // or drivers/redis, drivers/cluster
//	)
//
//	m, err := lock.Open(ctx, lock.Config{Driver: "sqlite", SQLite: lock.SQLiteConfig{Path: "/var/lib/app/locks.db"}})
//
// Opening a driver that is not imported fails with a *NotLinkedError that
// names the missing import (it matches ErrNotLinked and ErrInvalid). The
// redis and cluster drivers contact their backend within Open's context
// and fail with ErrUnavailable when it does not answer.
//
// # Logging
//
// Config.Logger (and WithLogger for New) takes a *slog.Logger; nil
// discards everything. The Manager logs only what nobody else would see: a
// lock lost in the background, a release that failed after its callback
// returned. The redis driver also routes go-redis's own messages through
// it (see package drivers/redis).
//
// # TTL, refresh and the lost-lock signal
//
// Every lock has a TTL: the backend frees it on its own after that long, so
// a holder that crashes can never block a key forever. A callback that may
// outlive its TTL should ask for refreshing (WithRefresh): the lock is then
// extended in the background while the callback runs, and the TTL only says
// how long after a crash someone else may take over.
//
// A lock can still be lost while it is held: the process stalled, the
// backend was unreachable, or someone force-released it. The callback is
// told: its context is cancelled, and context.Cause of that context is a
// *LostError (errors.Is(cause, ErrLost)). Try and Block then return the
// *LostError.
//
// The holder is told a safety margin before the lock's estimated expiry
// (WithSafetyMargin; a fifth of the TTL by default), not at the expiry:
// from then on the backend may hand the key on, and the holder needs time
// to stop. Without refresh, that is when the TTL less the margin has run
// out while the callback still runs; with refresh, when refreshes kept
// failing until then.
//
// The *LostError's Reason says why, and errors.Is matches it:
// ErrLostExpired (the TTL, less the margin, ran out), ErrLostTaken (a
// refresh found the lock gone: taken over or force-released),
// ErrLostUnreachable (refreshes failed; the last refresh error is its
// Cause, reachable with errors.Is and errors.Unwrap), ErrLostRefused (a
// refresh was refused for the credentials, a token revoked or no longer
// allowed the key: told at once, not at the margin; the refusal is its
// Cause, so ErrUnauthorized or ErrForbidden matches), ErrLostMaxHold (the
// grant reached its cap on total hold time, WithMaxHold: told the safety
// margin before the cap, however well refreshes go, since the backend lets
// no refresh pass it), ErrLostClosed (the Manager was closed; it also
// matches ErrClosed). After ErrLostExpired, ErrLostMaxHold and
// ErrLostUnreachable the backend may still hold the grant (a refresh whose
// answer was lost may have been applied; a cap is told early), so once the
// callback has returned the Manager releases it, owner-guarded, instead of
// leaving the key blocked until the TTL or the cap runs out.
//
// # A cap on total hold time
//
// A holder that is alive but wedged keeps refreshing its lock forever.
// WithMaxHold caps how long a grant can be held, refreshes or not: the
// backend records the cap when it grants the key and enforces it itself
// (the engine and the cluster's state machine, the Redis scripts, the
// SQLite and PostgreSQL transactions), so no refresh loop outlasts it, and
// the next waiter is served at the cap. A driver that cannot enforce one
// refuses it (ErrUnsupported).
//
// The signal is a request, not a guarantee: code that ignores its context
// keeps running outside the lock. Work that must not continue after losing
// exclusivity checks its context between steps and, where the protected
// resource allows it, passes Lock.Fence to that resource.
//
// A refresh never re-acquires a lock that has expired: a lock that is gone
// is reported as lost, never silently granted again.
//
// # Semaphores and read/write locks
//
// Semaphores and read/write locks are a key held in another way: give Try,
// Block or Make one of Semaphore(n), Read() or Write(), and the rest (the TTL, refresh,
// the lost-lock signal, the fence, Release) works as for a mutex. Every
// grant has its own fence, strictly increasing per key, so a resource can
// order holders, and readers against writers.
//
// Waiting is first come, first served: a caller is granted at once only
// when nobody waits and there is room; the first waiter is served first,
// and nobody behind it is let in while it waits, even a caller there would
// be room for. So a waiting writer stops new readers (no writer
// starvation), and a waiter is never overtaken.
//
// A key is one kind at a time: while anyone holds or waits for it as a
// semaphore of n, a call naming another n, or a mutex, read or write lock,
// gets an error matching ErrInvalid that says what the key is held as. A
// new n takes effect once the key is free, so nobody is ever beyond the
// limit: to change it, drain the key or use a new name. An owner holds one
// grant of a key: asking for the write side while holding the read side
// is ErrInvalid (release first).
//
// Every backend of this module serves them, waiting first come, first
// served across processes on SQLite and Redis too (the queue is kept in
// the backend; a waiter keeps its place alive while it waits, and a dead
// process's place lapses after a few seconds). A driver of your own that
// does not declare drivers.Capabilities.Shared answers ErrUnsupported.
//
// # Several keys at once
//
// TryAll and BlockAll take several keys all or none, with one fence per
// key, and run the callback while holding them all; its context ends when
// any of them is lost, naming it (a *LostError with its Key). A TryAll
// that meets a held key fails with that key's *NotAcquiredError, holding
// none.
//
// Where the backend can (drivers.Capabilities.Sets: the engine and the
// cluster in one log entry, SQLite in one transaction, Redis in one
// script when the keys share a hash slot) the keys are taken in one
// atomic step, so no other caller ever sees part of the set taken. A
// BlockAll waits first come, first served for the whole set where the
// backend waits for sets (Capabilities.SetWait: the engine, the cluster,
// SQLite, and Redis for keys of one slot): the free keys are taken and the
// busy ones queued for in one step, so a set never overtakes an earlier
// request on any of its keys, and sets named in any order never wait for
// each other in a circle. Elsewhere (Redis Cluster keys in different
// slots, a cluster member of an older release, a driver of your own) the
// keys are taken one at a time in sorted order: still all or none and
// deadlock-free, but between the first grant and the last the caller holds
// part of the set. WithTimeout bounds the whole wait; when it passes the
// keys taken are released and the *NotAcquiredError of the key still
// waited for is returned.
//
// # Who holds it
//
// Every owner a Manager makes is a random token followed by a short
// description of its holder (WithHolder, Config.Holder; the process id and
// host name by default). A refused call's *NotAcquiredError says who holds
// the key (Holder) and for how long (HolderTTL), on every backend, in one
// round trip; for a semaphore or read/write lock it names the holder in
// the way: the grant that ends first for a slot or a read, the one that
// ends last for a write. drivers.HolderOf reads the description out of an
// owner; the token, which lets its bearer release or extend the grant, is
// never in a NotAcquiredError. A holder description is one word of visible
// characters, at most 256 bytes; anything else is ErrInvalid, never
// shortened in silence.
//
// # Fencing
//
// Every grant carries a fence, a number that strictly increases with each
// new grant of a key (refreshes keep it). A resource that remembers the
// highest fence it has seen can refuse writes from a holder whose lock
// expired and was granted to someone else in the meantime. A fence of 0
// means the backend has no fencing.
//
// # Keys and prefixes
//
// The Manager prefixes every key once; drivers only ever see prefixed keys,
// while errors and Lock.Key show the key as the caller wrote it. The default
// prefix is "zerotal_lock:", which keeps locks apart from other data in a
// shared Redis or SQLite file, except on the cluster: it holds nothing but
// locks, and a key is named as written there, so "deploy" through this
// package, `lockcluster run --key deploy`, the HTTP API and `lockcluster
// locks` is one lock. Keys must be non-empty valid UTF-8 and, with the prefix,
// at most drivers.MaxKeyLen bytes; TTLs lie between drivers.MinTTL and
// drivers.MaxTTL. Bad input is rejected with an error matching ErrInvalid
// before any backend call.
//
// # Errors
//
// Contention is a *NotAcquiredError (ErrNotAcquired), also when Block's
// timeout passes; a caller's own cancelled or expired context is reported as
// that context's error instead, never as contention. A backend that cannot be
// reached is ErrUnavailable, distinct from contention. Bad input is an
// *InvalidError (ErrInvalid), reported before any backend call. Every error
// compares with errors.Is against the sentinels of this package, whichever
// backend produced it.
//
// # Closing
//
// Manager.Shutdown is the graceful way out, like http.Server.Shutdown: it
// refuses new locks (ErrClosed), cancels the context of every callback
// still running (with a *LostError whose reason is ErrLostClosed, which
// matches ErrClosed), waits within its context for the callbacks to return
// and release their locks, and then closes the driver. When its context
// ends first it returns that context's error and closes nothing.
//
// Manager.Close does the same at once, without waiting: a callback still
// running when the driver closes cannot release its lock, which then stays
// held on a shared backend until its TTL runs out. Calls made afterwards
// return ErrClosed. Shut down or close a Manager once its work is done, so
// that nothing outlives it.
//
// # Choosing a backend
//
// The backend is a configuration choice (Config.Driver), never a silent
// switch at run time: two processes holding one key on two different
// backends would both believe they are alone. "memory" coordinates one
// process, "sqlite" with a file path every process on one host, and
// "cluster" (or "redis") many hosts. Each but memory is linked by importing
// its package (see above).
package lock
