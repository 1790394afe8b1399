// Package drivers is the contract between package lock and a lock backend,
// and the one page a driver author reads.
//
// # The contract
//
// A driver implements Driver. Every method is one atomic operation at the
// backend: two handles on the same backend never both believe they hold a
// key. A driver does not validate user input, retry or log loudly; the
// lock.Manager does those things once for every backend.
//
//   - Acquire(ctx, Request) (Grant, error) is the one acquire. A Request
//     carries the keys (one, or a set of up to MaxMultiKeys taken all or
//     none), the owner, the TTL, the Claim (a mutex when zero, a semaphore's
//     slot, a read or write side) and whether to Wait. A key the owner
//     holds already is refreshed: new deadline, same fence. The Grant says
//     whether every key was granted, with their fences in the order of
//     Request.Keys (a fence grows with every new grant of a key; 0 means no
//     fencing), or, when not, which key is in the way and what the backend
//     tells of its holder (Busy, HeldBy; the holder's name is HolderOf its
//     owner, never the owner's token).
//   - Capabilities() declares which requests Acquire serves (below).
//   - Release(key, owner) deletes a grant only if owner holds it;
//     ForceRelease deletes it whoever holds it; Exists says whether a key is
//     held; Close frees the driver and is idempotent, and every call after it
//     returns ErrClosed.
//
// Each field of Capabilities has a fallback in the Manager, so a driver of
// plain mutexes that answers at once (the zero Capabilities) is a complete
// driver:
//
//	field           the Manager without it
//	Wait            polls every WaitOptions.RetryDelay
//	InstantAcquire  goes straight to the wait in a waiting call
//	Shared          refuses shared claims with ErrUnsupported
//	Sets            takes the keys one at a time, in sorted order
//	SetWait         takes a set in one step when all are free (Sets), else one at a time
//
// A request the driver cannot serve, declared or not (Redis Cluster keys in
// different hash slots, a cluster member of an older release), is answered
// with an error matching ErrUnsupported, having taken nothing; for a set the
// Manager then takes the keys one at a time.
//
// Optional interfaces add what not every backend can do, each with its
// fallback documented on it: Extender (extend without any chance of a new
// grant), KeyNamer (the default key prefix), Inspector (holders and
// waiters of a key), Lister (the held keys under a prefix) and
// ChangeWatcher (a signal when a key may have changed hands).
//
// # Waiting
//
// A Request with Wait returns once every key is granted, or when ctx ends.
// The driver hands keys to waiters first come, first served. A wait that
// ctx ends returns an error wrapping ctx.Err(); when the backend's last
// attempt failed or got no answer it also matches ErrUnavailable (an outage
// is never passed off as contention), and it may carry a *NotAcquiredError
// naming the key still waited for and its holder (HeldByWhenEnded). It
// leaves no key held: a grant made as ctx ended is released by the driver or
// left to its TTL, and with WaitOptions.OwnerReused it is always left to its
// TTL, since a late release could free the same owner's next grant.
//
// # Errors
//
// The sentinels are declared here once and aliased by package lock:
// ErrNotAcquired (with *NotAcquiredError), ErrUnavailable and
// ErrOutcomeUnknown (wrap a backend failure with Unavailable or
// OutcomeUnknown: the latter when the request may have taken effect),
// ErrClosed, ErrInvalid (with *InvalidError; KindMismatch for a key held as
// another kind), ErrUnsupported, ErrUnauthorized, ErrForbidden and
// ErrNoLongerHeld. Contention is not an error: Acquire without Wait
// answers Grant.Acquired false with a nil error. StatusCode maps any of
// them to the one HTTP status every entry point uses.
//
// # Registering and testing a driver
//
// A driver that lock.Open can choose by name calls Register in an init
// function of its package. Its tests run the conformance suite of package
// drivers/driverstest on two or more independent handles on one backend:
//
//	func TestConformance(t *testing.T) {
//		driverstest.Run(t, func(t *testing.T) driverstest.Harness { return myHarness(t) })
//	}
//
// and, when it declares Shared, driverstest.RunShared too. The suite adapts
// to the declared Capabilities, and driverstest.Take and its siblings make
// the common requests in a driver's own tests. driverstest.Reference is the
// simplest correct driver, to read beside this page.
package drivers
