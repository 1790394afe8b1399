package lock

import "github.com/zerotal/lock/drivers"

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
	// ErrOutcomeUnknown: a request that changes state may have reached the
	// backend and got no usable answer, so it may or may not have taken
	// effect. Errors that match it also match ErrUnavailable; an
	// ErrUnavailable that does not match it reached no backend at all.
	ErrOutcomeUnknown = drivers.ErrOutcomeUnknown
	// ErrInvalid: the request was rejected before reaching the backend.
	ErrInvalid = drivers.ErrInvalid
	// ErrFull: the backend refuses new keys or waiters because a configured
	// limit is reached.
	ErrFull = drivers.ErrFull
	// ErrUnauthorized: the backend refused the credentials (the cluster's
	// token, Redis's password); it answered, so it is not ErrUnavailable.
	ErrUnauthorized = drivers.ErrUnauthorized
	// ErrForbidden: the backend knows the credentials but they lack the
	// right the request needs (a cluster token's role or key prefixes);
	// it answered, so it is not ErrUnavailable, and the credentials were
	// accepted, so it is not ErrUnauthorized.
	ErrForbidden = drivers.ErrForbidden
	// ErrUnsupported: the backend cannot serve the request, such as a
	// semaphore on a driver without them.
	ErrUnsupported = drivers.ErrUnsupported
	// ErrNotLinked: Open was asked for a driver whose package the program
	// does not import. It comes with ErrInvalid.
	ErrNotLinked = drivers.ErrNotLinked
)

// Why a held lock was lost: the Reason of a *LostError, which errors.Is
// matches. See drivers.LostReason.
const (
	// ErrLostExpired: the TTL, as estimated here and less the safety
	// margin (WithSafetyMargin), ran out while the callback was still
	// running, and no refresh error was to blame: the lock was not
	// refreshed, or the process stalled.
	ErrLostExpired = drivers.ErrLostExpired
	// ErrLostTaken: a refresh found the lock gone: it expired at the
	// backend and may have been granted to another owner, or it was
	// force-released.
	ErrLostTaken = drivers.ErrLostTaken
	// ErrLostUnreachable: refreshes kept failing until the safety margin
	// before the TTL; the *LostError's Cause (reachable with errors.Is and
	// errors.Unwrap) is the last refresh error.
	ErrLostUnreachable = drivers.ErrLostUnreachable
	// ErrLostClosed: the Manager was closed or shut down (Close,
	// Shutdown) while the callback ran. It also matches ErrClosed.
	ErrLostClosed = drivers.ErrLostClosed
	// ErrLostRefused: a refresh was refused for the credentials (the
	// token revoked, or no longer allowed the key), and the callback is
	// told at once rather than at the safety margin: the backend will
	// refuse every refresh. The *LostError's Cause is the refusal, so
	// ErrUnauthorized or ErrForbidden matches too. The grant is left to
	// its TTL: a release would be refused alike.
	ErrLostRefused = drivers.ErrLostRefused
	// ErrLostMaxHold: the grant reached the cap on total hold time given
	// by WithMaxHold. The backend refuses to extend it past the cap, so
	// the callback is told a safety margin before the cap, however well
	// refreshes go.
	ErrLostMaxHold = drivers.ErrLostMaxHold
)

// NotAcquiredError says which key could not be acquired. It matches
// ErrNotAcquired and its Key is the key without the Manager's prefix.
type NotAcquiredError = drivers.NotAcquiredError

// LostError reports a lock that was lost while held. It matches ErrLost and
// its Reason (one of the ErrLost* reasons); when the backend was
// unreachable, its Cause is the last refresh error, reachable with
// errors.Is and errors.Unwrap. The callback's context is cancelled with it
// as its cause (context.Cause).
type LostError = drivers.LostError

// LostReason says why a lock was lost; its values are the ErrLost* reasons.
type LostReason = drivers.LostReason

// InvalidError describes input rejected before any backend call. It matches
// ErrInvalid.
type InvalidError = drivers.InvalidError

// NotLinkedError names the import that links a driver into the program
// (import _ "github.com/zerotal/lock/drivers/redis"). It matches
// ErrNotLinked and ErrInvalid.
type NotLinkedError = drivers.NotLinkedError

// StatusCode returns the HTTP status that err stands for: 409 Conflict for
// contention and for a lock lost to another owner or to its TTL, 400 for
// invalid input, 401 for refused credentials, 403 for a refused right
// (ErrForbidden), 429 for a full backend, 501
// for an unsupported claim, 503 when the backend cannot answer now, and
// 500 for anything else. The typed errors (NotAcquiredError, LostError,
// InvalidError, NotLinkedError) report the same through their own
// StatusCode method, which HTTP frameworks that look for it (go-kit's
// StatusCoder, for one) read. It is the map the cluster's API answers
// with.
func StatusCode(err error) int { return drivers.StatusCode(err) }
