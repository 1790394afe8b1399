package drivers

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors, declared once here and aliased by package lock. Compare
// with errors.Is.
var (
	// ErrNotAcquired: the key is held by another owner (or a wait timed out).
	ErrNotAcquired = errors.New("lock: not acquired")
	// ErrLost: a lock that was held is no longer held by its owner.
	ErrLost = errors.New("lock: lost")
	// ErrClosed: the manager or driver has been closed.
	ErrClosed = errors.New("lock: closed")
	// ErrUnavailable: the backend cannot be reached or has no quorum. It is
	// never returned for plain contention.
	ErrUnavailable = errors.New("lock: backend unavailable")
	// ErrOutcomeUnknown: a request that changes state may have reached the
	// backend, and no answer says what became of it: it may or may not
	// have taken effect. Every error that matches it also matches
	// ErrUnavailable; an ErrUnavailable that does not match it means that
	// the request reached no backend at all.
	ErrOutcomeUnknown = errors.New("lock: outcome unknown")
	// ErrNoLongerHeld comes with ErrOutcomeUnknown when a Release was
	// retried after an attempt that got no answer and the retry found the
	// key no longer held by the owner: the earlier attempt may have
	// released it, or the grant ran out, but either way the owner does not
	// hold the key now.
	ErrNoLongerHeld = errors.New("lock: no longer held by the owner")
	// ErrInvalid: the request was rejected before reaching the backend
	// (empty or over-long key, TTL out of range, nil callback...).
	ErrInvalid = errors.New("lock: invalid argument")
	// ErrFull: the backend refuses new keys or waiters because a configured
	// limit is reached.
	ErrFull = errors.New("lock: limit reached")
	// ErrUnauthorized: the backend refused the credentials: the cluster a
	// token, Redis a password (or none given where one is required). It
	// is never retried, and is not ErrUnavailable: the backend answered.
	ErrUnauthorized = errors.New("lock: credentials refused")
	// ErrForbidden: the backend knows the credentials, but they lack the
	// right the request needs: a cluster token's role (a metrics token
	// taking a lock) or its key prefixes. It is never retried, and is
	// neither ErrUnauthorized (the credentials were accepted) nor
	// ErrUnavailable: the backend answered.
	ErrForbidden = errors.New("lock: forbidden: the credentials lack the right for this request")
	// ErrUnsupported: the backend cannot serve the request: a driver
	// without semaphores and read/write locks (Capabilities.Shared), or a
	// cluster with a member too old to apply them. It is not retried.
	ErrUnsupported = errors.New("lock: not supported by the backend")
)

// NotAcquiredError says which key could not be acquired. It matches
// ErrNotAcquired with errors.Is and reports HTTP status 409.
type NotAcquiredError struct {
	Key string
	// HolderTTL is how long the holder's lease had left when the backend
	// answered, unless the holder refreshes it; 0 when unknown (a backend
	// that does not tell, or a wait that timed out).
	HolderTTL time.Duration
	// Holder is who holds the key, as its owner says (HolderOf): "" when
	// unknown.
	Holder string
}

func (e *NotAcquiredError) Error() string {
	if e.Holder != "" {
		return fmt.Sprintf("lock: not acquired: %q is held by another owner (%s)", e.Key, e.Holder)
	}
	return fmt.Sprintf("lock: not acquired: %q is held by another owner", e.Key)
}

// Is makes errors.Is(err, ErrNotAcquired) true.
func (e *NotAcquiredError) Is(target error) bool { return target == ErrNotAcquired }

// HeldByWhenEnded is the error of a wait that ctx ended while another
// owner held key: it wraps err (ctx's error) and a *NotAcquiredError with
// the holder as last seen (held.Holder: HolderOf its owner) and its
// remaining time, so that the caller is told who had it and for how long.
func HeldByWhenEnded(err error, key string, held HeldBy) error {
	return fmt.Errorf("%w: %w", err, &NotAcquiredError{Key: key, HolderTTL: max(held.TTL, 0), Holder: held.Holder})
}

// LostError reports that a held lock was lost (or must be treated as lost)
// while its holder was using it. Reason says why; Cause is the error behind
// it, if there was one.
type LostError struct {
	Key   string
	Fence uint64
	// Reason is why the lock was lost: one of the ErrLost* reasons (0 when
	// not known).
	Reason LostReason
	// Cause is the error of the last failed refresh when Reason is
	// ErrLostUnreachable, and the refresh's refusal when it is
	// ErrLostRefused (it matches ErrUnauthorized or ErrForbidden); nil
	// otherwise.
	Cause error
}

func (e *LostError) Error() string {
	msg := fmt.Sprintf("lock: lost %q (fence %d): %s", e.Key, e.Fence, e.Reason.text())
	if e.Cause != nil {
		msg += ": " + e.Cause.Error()
	}
	return msg
}

// Is makes errors.Is(err, ErrLost) true, and errors.Is(err, r) for the
// Reason r (and for what r matches: ErrLostClosed matches ErrClosed).
func (e *LostError) Is(target error) bool {
	return target == ErrLost || (e.Reason != 0 && errors.Is(e.Reason, target))
}

// Unwrap exposes the cause, so errors.Is(err, ErrUnavailable) also works
// when the lock was lost because the backend was unreachable.
func (e *LostError) Unwrap() error { return e.Cause }

// InvalidError describes input rejected before any backend call.
type InvalidError struct {
	Field  string
	Reason string
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("lock: invalid %s: %s", e.Field, e.Reason)
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// Unavailable wraps err so that it matches ErrUnavailable as well as itself.
func Unavailable(op string, err error) error {
	if err == nil {
		return nil
	}
	return &unavailableError{op: op, err: err}
}

// OutcomeUnknown wraps err so that it matches ErrOutcomeUnknown and
// ErrUnavailable as well as itself: the backend gave no usable answer, and
// the request may have taken effect all the same.
func OutcomeUnknown(op string, err error) error {
	if err == nil {
		return nil
	}
	return &unavailableError{op: op, err: err, unknown: true}
}

type unavailableError struct {
	op      string
	err     error
	unknown bool // the request may have taken effect
}

func (e *unavailableError) Error() string {
	if e.unknown {
		return fmt.Sprintf("lock: backend unavailable, outcome unknown: %s: %v", e.op, e.err)
	}
	return fmt.Sprintf("lock: backend unavailable: %s: %v", e.op, e.err)
}
func (e *unavailableError) Is(target error) bool {
	return target == ErrUnavailable || (e.unknown && target == ErrOutcomeUnknown)
}
func (e *unavailableError) Unwrap() error { return e.err }
