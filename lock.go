package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zerotal/lock/drivers"
)

// Lock is a handle on one key, made by Manager.Make or handed to the
// callback of Try and Block. It is safe for concurrent use: calls that reach
// the backend are serialised, and the accessors never wait for the backend.
//
// Each acquisition uses a fresh owner token, so a release or refresh made
// after the lock expired and was granted to someone else is a harmless
// no-op.
type Lock struct {
	m       *Manager
	key     string    // as the caller wrote it
	keys    [1]string // the key with the Manager's prefix: the Keys of the handle's requests
	fences  [1]uint64 // room for a grant's fence (Request.Fences)
	ttl     time.Duration
	invalid error // a bad key or TTL, reported by every call

	op   sync.Mutex // serialises the backend calls made through this handle
	wait quitWait   // the registration of the handle's wait (under op)
	// fixedOwner, when set (WithOwner), is the owner token of every grant
	// made through this handle, instead of a fresh one each time.
	fixedOwner string
	// claim is how the handle holds its key: a mutex (zero), a semaphore's
	// slot, a read/write lock's side.
	claim drivers.Claim
	// maxHold caps each grant's total hold time at the backend
	// (WithMaxHold); 0: no cap.
	maxHold time.Duration

	mu        sync.Mutex // guards the fields below; never held across a backend call
	owner     string
	fence     uint64
	held      bool
	lost      bool // the last grant was found gone (not released by us)
	expiresAt time.Time
	// capAt is the estimate of the grant's cap (maxHold counted from when
	// its acquire was sent, so never later than the backend's); zero
	// without a cap. expiresAt never passes it.
	capAt time.Time
	// capLoose says that capAt may be far too early: the grant came after
	// a wait, somewhere between the sending and the answer. Refreshes then
	// raise it from what the backend tells (tightenCap).
	capLoose bool
}

// Key returns the key as given to Make, without the Manager's prefix.
func (l *Lock) Key() string { return l.key }

// fullKey is the key with the Manager's prefix, as the backend names it.
func (l *Lock) fullKey() string { return l.keys[0] }

// TTL returns the time-to-live requested for every acquisition and refresh.
func (l *Lock) TTL() time.Duration { return l.ttl }

// Err is what Make found wrong with the key, the TTL or a claim (an
// *InvalidError, or an error matching ErrUnsupported), which every call
// on the handle reports; nil when the handle is usable.
func (l *Lock) Err() error { return l.invalid }

// IsAcquired reports whether this handle believes it holds the lock: it
// acquired it and has neither released it nor found it gone. Only the
// backend knows for sure; Refresh asks it.
func (l *Lock) IsAcquired() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held
}

// ExpiresAt is a client-side estimate of when the backend will free the
// lock: the TTL counted from when the last acquire or refresh was sent, so
// it errs early, never late, and never past the grant's cap (WithMaxHold,
// counted from when the acquire was sent). It is the zero time when the
// lock is not held.
// Use it to decide when to refresh, not whether the lock is still held.
//
// A handle used outside Try and Block has no lost-lock signal: its holder
// should stop a safety margin before ExpiresAt (Try and Block use a fifth
// of the TTL, see WithSafetyMargin), as the backend may hand the key on
// from ExpiresAt on.
func (l *Lock) ExpiresAt() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.held {
		return time.Time{}
	}
	return l.expiresAt
}

// Fence returns the fencing token of the handle's last grant: it strictly
// increases with every new grant of the key and is unchanged by refreshes.
// Pass it to the resource the lock protects so that it can refuse a holder
// whose lock was granted to someone else since. It stays the last grant's
// after Release or a loss (to log or to report what was held); check
// IsAcquired for whether it is still held. It is 0 before the first grant,
// or when the driver has no fencing.
func (l *Lock) Fence() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fence
}

// Owner returns the owner token of the current grant, as the backend
// records it (lockcluster locks and the cluster's HTTP API show it): an
// operator can tell this holder apart from others with it. It is "" when
// the lock is not held.
func (l *Lock) Owner() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.held {
		return ""
	}
	return l.owner
}

// Acquire tries once to take the lock and reports whether it did; false with
// a nil error means another owner holds it. On a handle that already holds
// the lock, Acquire is Refresh.
//
// Once Shutdown has begun, Acquire returns ErrClosed.
func (l *Lock) Acquire(ctx context.Context) (bool, error) {
	if err := l.usableToAcquire(); err != nil {
		return false, err
	}
	l.op.Lock()
	defer l.op.Unlock()
	if l.IsAcquired() {
		return l.refreshLocked(ctx)
	}
	ok, _, err := l.acquireLocked(ctx)
	return ok, err
}

// Block waits up to timeout for the lock (0 means the TTL) and returns a
// *NotAcquiredError when the timeout passes first, the context's error
// when ctx ends first, or an error matching ErrClosed when the Manager is
// closed meanwhile. Drivers that wait themselves
// (drivers.Capabilities.Wait) hand the lock over as soon as it frees, in
// arrival order; the others are polled every retry delay (WithRetryDelay).
// WithTimeout, the refresh options, WithSafetyMargin, WithReleaseTimeout
// and WithOwner do not apply here: timeout is the argument; Semaphore,
// Read, Write and WithMaxHold belong to Make. On a handle that already holds the lock,
// Block refreshes it, and waits for a new grant only if it was lost.
// Once Shutdown has begun, Block returns ErrClosed.
func (l *Lock) Block(ctx context.Context, timeout time.Duration, opts ...Option) error {
	if err := l.usableToAcquire(); err != nil {
		return err
	}
	if timeout < 0 {
		return &InvalidError{Field: "timeout", Reason: fmt.Sprintf("must not be negative, got %v", timeout)}
	}
	if timeout == 0 {
		timeout = l.ttl
	}
	o, err := buildOptions(l.ttl, opts)
	if err != nil {
		return err
	}
	if o.claim != (drivers.Claim{}) || o.maxHold != 0 {
		return &InvalidError{Field: "option", Reason: "a handle's Semaphore, Read, Write or WithMaxHold is given to Make"}
	}
	l.op.Lock()
	defer l.op.Unlock()
	if l.IsAcquired() {
		ok, err := l.refreshLocked(ctx)
		if ok || err != nil {
			return err
		}
	}
	return l.waitLocked(ctx, timeout, o.retryDelay)
}

// Refresh extends the lock by its TTL, never past the grant's cap
// (WithMaxHold), and reports whether it is still held.
// It never re-acquires: when the lock is gone (expired, or taken over), it
// returns false and the handle stops claiming to hold it. A backend error
// leaves the handle as it was: the lock may still be held.
//
// With a driver that implements drivers.Extender this is one owner-guarded
// call. Otherwise the lock is re-acquired by the same owner and the fence
// compared: a different fence means the lock had expired and was granted
// anew, which is released at once and reported as false. On a driver
// without fencing (fence 0), a lock whose estimated expiry has passed is
// reported as false without asking the backend, because a re-grant could
// not be told apart from a refresh.
func (l *Lock) Refresh(ctx context.Context) (bool, error) {
	if err := l.usable(); err != nil {
		return false, err
	}
	l.op.Lock()
	defer l.op.Unlock()
	return l.refreshLocked(ctx)
}

// Release frees the lock if this handle holds it; otherwise it does
// nothing. Releasing a lock that expired, or that someone else holds now,
// is a harmless no-op at the backend.
func (l *Lock) Release(ctx context.Context) error {
	if err := l.usable(); err != nil {
		return err
	}
	l.op.Lock()
	defer l.op.Unlock()
	return l.releaseLocked(ctx)
}

// ForceRelease frees the key whoever holds it. It is meant for operators
// clearing a lock they know to be stale; the holder will find its lock gone
// at its next refresh.
func (l *Lock) ForceRelease(ctx context.Context) error {
	if err := l.usable(); err != nil {
		return err
	}
	l.op.Lock()
	defer l.op.Unlock()
	if err := l.m.driver.ForceRelease(ctx, l.fullKey()); err != nil {
		return failed(ctx, "force release", l.key, true, err)
	}
	l.mu.Lock()
	l.held, l.lost = false, false
	l.mu.Unlock()
	return nil
}

// usable reports why the handle cannot be used, if it cannot.
func (l *Lock) usable() error {
	if l.invalid != nil {
		return l.invalid
	}
	if l.m.closed.Load() {
		return ErrClosed
	}
	return nil
}

// usableToAcquire is usable for the calls that take a lock, which
// Shutdown refuses while Release and Refresh still work.
func (l *Lock) usableToAcquire() error {
	if err := l.usable(); err != nil {
		return err
	}
	if l.m.stopping.Load() {
		return ErrClosed
	}
	return nil
}

// nextOwner is the owner token of the next acquisition: the one given
// with WithOwner, else a fresh one.
func (l *Lock) nextOwner() string {
	if l.fixedOwner != "" {
		return l.fixedOwner
	}
	return newOwner(l.m.ownerSuffix)
}

// acquireLocked makes one fresh acquisition attempt. l.op must be held.
// When another owner holds the key, notAcq says so, with who holds it and
// its remaining time when the driver tells (drivers.Grant.Busy).
func (l *Lock) acquireLocked(ctx context.Context) (ok bool, notAcq *NotAcquiredError, err error) {
	owner := l.nextOwner()
	sent := time.Now()
	fence, ok, held, err := l.acquireAt(ctx, owner)
	if err != nil {
		l.abandon(ctx, owner, err)
		return false, nil, failed(ctx, "acquire", l.key, true, err)
	}
	if !ok {
		return false, &NotAcquiredError{Key: l.key, HolderTTL: held.TTL, Holder: held.Holder}, nil
	}
	l.granted(owner, fence, sent)
	return true, nil, nil
}

func (l *Lock) granted(owner string, fence uint64, sent time.Time) {
	l.mu.Lock()
	l.owner, l.fence, l.held, l.lost = owner, fence, true, false
	l.capAt, l.capLoose = time.Time{}, false
	if l.maxHold > 0 {
		l.capAt = sent.Add(l.maxHold)
	}
	l.expiresAt = l.deadlineFrom(sent)
	l.mu.Unlock()
}

// deadlineFrom is the estimated end of a grant refreshed (or made) by a
// request sent at sent: the TTL from then, but never past the cap, which
// no refresh moves. l.mu must be held.
func (l *Lock) deadlineFrom(sent time.Time) time.Time {
	d := sent.Add(l.ttl)
	if !l.capAt.IsZero() && l.capAt.Before(d) {
		return l.capAt
	}
	return d
}

// MaxHoldAt is a client-side estimate of when the grant reaches its cap
// on total hold time (WithMaxHold given to Make, Try, Block, TryAll or
// BlockAll): the cap counted from when the acquire was sent, so it errs
// early, never late. ExpiresAt never passes it. It is the zero time
// without a cap, or when the lock is not held.
func (l *Lock) MaxHoldAt() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.held {
		return time.Time{}
	}
	return l.capAt
}

// holdCap is the estimated cap of owner's grant, where no refresh moves
// its end, or the zero time: without a cap, or while the estimate is
// loose (capestimate.go), when refreshes go on to raise it.
func (l *Lock) holdCap(owner string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.owner != owner || l.capLoose {
		return time.Time{}
	}
	return l.capAt
}

// current returns the grant the handle believes it holds.
func (l *Lock) current() (owner string, fence uint64, expiresAt time.Time, held bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.owner, l.fence, l.expiresAt, l.held
}

// markLost records that the grant of owner is gone, unless the handle has
// moved on to another grant since.
func (l *Lock) markLost(owner string) {
	l.mu.Lock()
	if l.owner == owner && l.held {
		l.held, l.lost = false, true
	}
	l.mu.Unlock()
}

// refreshLocked implements Refresh. l.op must be held.
func (l *Lock) refreshLocked(ctx context.Context) (bool, error) {
	owner, fence, expiresAt, held := l.current()
	if !held {
		return false, nil
	}
	sent := time.Now()
	if ext, ok := l.m.driver.(drivers.Extender); ok {
		ok, err := ext.Extend(ctx, l.fullKey(), owner, l.ttl)
		if err != nil {
			return false, failed(ctx, "refresh", l.key, true, err)
		}
		if !ok {
			l.markLost(owner)
			return false, nil
		}
		l.extended(owner, sent)
		l.tightenCap(ctx, owner, sent)
		return true, nil
	}

	// Fallback: re-acquire by the same owner, which drivers treat as a
	// refresh, and make sure it was not a new grant in disguise.
	if fence == 0 && !sent.Before(expiresAt) {
		l.markLost(owner)
		l.releaseOwner(ctx, owner)
		return false, nil
	}
	got, ok, _, err := l.acquireAt(ctx, owner)
	if err != nil {
		return false, failed(ctx, "refresh", l.key, true, err)
	}
	if !ok {
		l.markLost(owner)
		return false, nil
	}
	if got != fence {
		// The lock had expired and the Acquire granted it again: that is
		// not the lock the holder has been relying on.
		l.markLost(owner)
		l.releaseOwner(ctx, owner)
		return false, nil
	}
	l.extended(owner, sent)
	l.tightenCap(ctx, owner, sent)
	return true, nil
}

func (l *Lock) extended(owner string, sent time.Time) {
	l.mu.Lock()
	if l.owner == owner && l.held {
		l.expiresAt = l.deadlineFrom(sent)
	}
	l.mu.Unlock()
}

// releaseLocked implements Release. l.op must be held.
func (l *Lock) releaseLocked(ctx context.Context) error {
	owner, _, _, held := l.current()
	if !held {
		return nil
	}
	return l.releaseGrant(ctx, owner)
}

// releaseGrant releases the grant of owner, which the handle holds. l.op
// must be held.
func (l *Lock) releaseGrant(ctx context.Context, owner string) error {
	if err := l.releaseAtBackend(ctx, owner); err != nil {
		return failed(ctx, "release", l.key, true, err)
	}
	l.markReleased(owner)
	return nil
}

// markReleased records that the handle no longer holds owner's grant.
func (l *Lock) markReleased(owner string) {
	l.mu.Lock()
	if l.owner == owner {
		l.held = false
	}
	l.mu.Unlock()
}

// releaseAtBackend asks the driver to release owner's grant. A release
// retried after a lost reply may not know whether it was the one that
// freed the key, but it knows the owner holds it no more: that is all a
// release is for, so ErrNoLongerHeld counts as done.
func (l *Lock) releaseAtBackend(ctx context.Context, owner string) error {
	if _, err := l.m.driver.Release(ctx, l.fullKey(), owner); err != nil && !errors.Is(err, drivers.ErrNoLongerHeld) {
		return err
	}
	return nil
}

// releaseOwner releases the grant of owner, one the handle no longer
// relies on: on ctx while ctx lives, so that the key is free when the call
// returns, and in the background (cleanUp) once ctx has ended, so that the
// call still returns by its deadline. Errors are logged only: the lock
// expires by its TTL anyway.
func (l *Lock) releaseOwner(ctx context.Context, owner string) {
	if ctx.Err() == nil {
		err := l.releaseAtBackend(ctx, owner)
		if err == nil || ctx.Err() == nil {
			l.logCleanup(err)
			return
		}
	}
	l.cleanUp(owner)
}

// cleanUp releases, in the background, a grant owner may hold at the
// backend that nobody will use: the caller's ctx cut the call off, or the
// backend's answer was lost. The release waits on a backend that just
// failed, so it must not hold up the caller; it is bounded by
// cleanupTimeout, and Close cancels it and waits for it. owner is a token
// of this handle's alone, and releases are owner-guarded: it never frees
// anyone else's grant.
func (l *Lock) cleanUp(owner string) { l.cleanUpWithin(owner, cleanupTimeout) }

// cleanUpWithin is cleanUp bounded by d instead of cleanupTimeout.
func (l *Lock) cleanUpWithin(owner string, d time.Duration) {
	if owner == l.fixedOwner {
		// A named owner may hold the key again by the time the release
		// arrives, through a later call: its grant is left to the TTL.
		return
	}
	l.m.cleanups.add()
	started := l.m.background(func(bg context.Context) {
		defer l.m.cleanups.done()
		ctx, cancel := context.WithTimeout(bg, d)
		defer cancel()
		if l.m.closed.Load() {
			return
		}
		l.logCleanup(l.releaseAtBackend(ctx, owner))
	})
	if !started {
		l.m.cleanups.done()
	}
}

func (l *Lock) logCleanup(err error) {
	if err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, context.Canceled) {
		l.m.logger.Warn("cleanup release failed", "key", l.key, "error", err)
	}
}

// abandon cleans up after an acquisition by owner that failed with err
// but may have been granted at the backend all the same, where nobody would
// ever release it and the key would stay blocked for a whole TTL:
//
//   - the caller's ctx ended: the backend may have granted the lock just
//     before the cancellation reached it;
//   - the backend was unavailable: the request may have been applied and
//     only its answer lost (a timeout, a dropped connection).
//
// Either way the release runs in the background (cleanUp), so that the
// caller learns of the failure by its deadline.
func (l *Lock) abandon(ctx context.Context, owner string, err error) {
	if ctx.Err() != nil || errors.Is(err, ErrUnavailable) {
		l.cleanUp(owner)
	}
}

// wrapOp adds the operation and the caller's key to a driver error; the
// sentinels stay reachable with errors.Is.
func wrapOp(op, key string, err error) error {
	return fmt.Errorf("lock: %s %q: %w", op, key, err)
}

// failed is wrapOp for the error of a call made on ctx. A call whose
// deadline passed before the backend answered got no answer in time: its
// error also matches ErrUnavailable, and ErrOutcomeUnknown when it changes
// state (it may have taken effect), so that a caller tells "the backend
// said no" from "the backend said nothing in time". (A call the caller
// cancelled claims neither; a request that changes state may still have
// taken effect, and the Manager cleans up after it.)
func failed(ctx context.Context, op, key string, changes bool, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.Is(err, ErrUnavailable) && !errors.Is(err, ErrClosed) {
		if changes {
			err = drivers.OutcomeUnknown("no answer before the context ended", err)
		} else {
			err = drivers.Unavailable("no answer before the context ended", err)
		}
	}
	return wrapOp(op, key, err)
}
