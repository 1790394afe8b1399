package drivers

import (
	"context"
	"time"
)

// Driver is what a lock backend implements. Every method must be atomic at
// the backend: two handles on the same backend must never both believe they
// hold the same key.
type Driver interface {
	// Acquire serves one Request: it takes every key of r for r.Owner
	// for r.TTL as r.Claim says, or refreshes (new deadline, same fence)
	// those the owner holds already, all or none. Grant.Acquired is false,
	// with a nil error, when another owner is in the way and r does not
	// Wait; Grant.Busy then says who. A request this driver cannot serve
	// (see Capabilities) is answered with an error matching
	// ErrUnsupported, having taken nothing.
	Acquire(ctx context.Context, r Request) (Grant, error)

	// Capabilities declares which requests Acquire serves; the Manager
	// falls back for the others. It is constant for the driver's life.
	Capabilities() Capabilities

	// Release deletes key if and only if owner holds it. It reports whether
	// it deleted anything; releasing a lock that expired or that someone
	// else now holds is a no-op that returns false.
	Release(ctx context.Context, key, owner string) (bool, error)

	// ForceRelease deletes key whoever holds it. Deleting a free key is not
	// an error.
	ForceRelease(ctx context.Context, key string) error

	// Exists reports whether key is currently held (and not expired).
	Exists(ctx context.Context, key string) (bool, error)

	// Close frees the driver's timers, goroutines and connections. It is
	// idempotent; every call after the first returns nil. Calls made after
	// Close return ErrClosed.
	Close() error
}

// Extender is the optional capability of extending a held lock without any
// chance of re-granting it.
//
// Extend sets the deadline of key to now+ttl if and only if owner holds it
// and it has not expired, never past the grant's cap (Request.MaxHold):
// the deadline becomes min(now+ttl, cap). It never creates a lock:
// extending a lock that is gone returns false.
//
// Fallback when a driver lacks it: the Manager refreshes with an Acquire
// by the same owner, after checking that the fence it gets back is the fence it
// already had (a different fence means the key had expired and was granted
// anew, which the Manager reports as a lost lock and releases).
type Extender interface {
	Extend(ctx context.Context, key, owner string, ttl time.Duration) (bool, error)
}

// KeyNamer is the optional capability of choosing the prefix a Manager
// adds to keys when it is given none. A backend that holds nothing but
// these locks, and has entry points of its own that name keys as written
// (the cluster's HTTP API and command line), answers "", so that one name
// is one lock through every entry point.
//
// Fallback when a driver lacks it: the Manager's DefaultPrefix, which
// keeps the locks apart from other data in a shared store.
type KeyNamer interface {
	DefaultPrefix() string
}

// WaitOptions tunes a Request that waits.
type WaitOptions struct {
	// RetryDelay bounds the pause between two polls for drivers that cannot
	// be told when a key frees. Drivers that are pushed may ignore it.
	RetryDelay time.Duration
	// OwnerReused says that a later call may use the same owner token
	// (the caller named it, as lock.WithOwner and an election do). A
	// grant this wait may leave behind when ctx ends is then left to its
	// TTL: a release sent for it in the background could reach the
	// backend after the later call's grant and free that one, since a
	// release is guarded by the owner alone. Otherwise the driver may
	// release such a grant itself.
	OwnerReused bool
}

// Listed is one name a Lister found: its key and what Inspect says of it.
type Listed struct {
	Key string
	Holding
}

// MaxListLimit is the most names one List call may ask for; the cluster's
// API refuses a larger limit, and the Manager checks it on every backend.
const MaxListLimit = 10000

// Lister is the optional capability of listing the held names that start
// with a prefix, so that an operator can see every lock of a backend
// ("lockcluster locks").
//
// ListHeld returns those names sorted by key, at most limit of them (limit
// is 1 to MaxListLimit: the Manager checks it), each described as
// Inspector.Inspect describes it, with the grants past their deadline left
// out and a name left out when none is left. truncated is true when more
// names may match: the limit was reached, or the backend stopped at a
// bound of its own, which its documentation names (a Redis scan, a
// cluster's answer size); the names returned are then sorted but may not
// be the first ones. The list is read at one moment on a backend that
// reads atomically (the engine, SQLite, the cluster); Redis reads each
// name on its own.
//
// Fallback when a driver lacks it: the Manager's List returns an error
// matching ErrUnsupported.
type Lister interface {
	ListHeld(ctx context.Context, prefix string, limit int) (locks []Listed, truncated bool, err error)
}
