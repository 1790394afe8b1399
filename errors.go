package lock

import (
	"errors"

	"github.com/zerotal/lock/drivers"
)

// Errors returned by this package, shared with every driver. Compare with
// errors.Is; the typed errors below carry the details.
var (
	// ErrNotAcquired: the key is held by another owner, or a wait timed out.
	ErrNotAcquired = drivers.ErrNotAcquired
	// ErrLost: a lock that was held is no longer held by its owner.
	ErrLost = drivers.ErrLost
	// ErrClosed: the Manager (or its driver) has been closed.
	ErrClosed = drivers.ErrClosed
	// ErrUnavailable: the backend cannot be reached; never returned for
	// plain contention.
	ErrUnavailable = drivers.ErrUnavailable
	// ErrInvalid: the request was rejected before reaching the backend.
	ErrInvalid = drivers.ErrInvalid
	// ErrFull: the backend refuses new keys or waiters because a configured
	// limit is reached.
	ErrFull = drivers.ErrFull
)

// ErrExpired is the Cause of the LostError reported when a lock that is not
// refreshed reaches the end of its TTL (as estimated on this side) while the
// callback is still running.
var ErrExpired = errors.New("lock: ttl ran out before the callback returned")

// NotAcquiredError says which key could not be acquired. It matches
// ErrNotAcquired and its Key is the key without the Manager's prefix.
type NotAcquiredError = drivers.NotAcquiredError

// LostError reports a lock that was lost while held. It matches ErrLost,
// and its Cause (nil when the backend answered that the lock is gone) is
// reachable with errors.Is.
type LostError = drivers.LostError

// InvalidError describes input rejected before any backend call. It matches
// ErrInvalid.
type InvalidError = drivers.InvalidError
