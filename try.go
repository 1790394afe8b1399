package lock

import (
	"cmp"
	"context"
	"errors"
	"time"
)

// Func is the work done while a lock is held. ctx is cancelled when the
// lock is lost, or about to be (a safety margin before its estimated
// expiry), or when the Manager is closed: context.Cause(ctx) is then a
// *LostError whose Reason says why. It is also cancelled when the caller's
// context ends. l is the held lock: its Fence is what to pass to the
// protected resource.
type Func func(ctx context.Context, l *Lock) error

// Try acquires key once and runs fn while holding it. When another owner
// holds key it returns a *NotAcquiredError at once, without running fn.
//
// The lock is always released when fn returns, also when fn returns an error
// or panics (the panic continues after the release). A caller whose ctx has
// ended by then still releases: the release is then made on a fresh context
// (without ctx's cancellation, bounded by a few seconds). If the release
// fails after fn succeeded, the failure is logged and Try returns nil: the
// work is done, and the lock expires by its TTL.
//
// If the lock is lost while fn runs (see WithRefresh, and the package
// documentation for locks that are not refreshed), fn's context is
// cancelled and Try returns the *LostError; an error fn returned as well,
// other than the cancellation itself, stays reachable with errors.Is.
//
// Options: WithRefresh, WithRefreshEvery, WithSafetyMargin and
// WithMaxHold; the waiting options are ignored.
func (m *Manager) Try(ctx context.Context, key string, ttl time.Duration, fn Func, opts ...Option) error {
	c, o, err := m.prepare(key, ttl, fn, opts)
	if err != nil {
		return err
	}
	// The handle is new and not shared yet: no need to serialise on it.
	ok, held, err := c.l.acquireLocked(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return held
	}
	return m.callWhileHeld(ctx, c, fn, &o)
}

// Block waits for key up to the WithTimeout duration (default: the TTL),
// then runs fn while holding it, like Try. When the timeout passes first it
// returns a *NotAcquiredError; when ctx ends first, ctx's error; when the
// Manager is closed meanwhile, an error matching ErrClosed.
//
// Drivers that wait themselves (drivers.Capabilities.Wait) hand the lock
// over as soon as it frees, in arrival order; the others are polled every
// WithRetryDelay.
func (m *Manager) Block(ctx context.Context, key string, ttl time.Duration, fn Func, opts ...Option) error {
	c, o, err := m.prepare(key, ttl, fn, opts)
	if err != nil {
		return err
	}
	l := &c.l
	l.op.Lock()
	err = l.waitLocked(ctx, o.timeout, o.retryDelay)
	l.op.Unlock()
	if err != nil {
		return err
	}
	return m.callWhileHeld(ctx, c, fn, &o)
}

// call is the state of one Try or Block, allocated at once.
type call struct {
	l Lock
	h heldWatch
}

// prepare validates everything before any backend call.
func (m *Manager) prepare(key string, ttl time.Duration, fn Func, opts []Option) (*call, options, error) {
	if m.invalid != nil {
		return nil, options{}, m.invalid
	}
	if err := validateKey(m.prefix, key); err != nil {
		return nil, options{}, err
	}
	if err := validateTTL(ttl); err != nil {
		return nil, options{}, err
	}
	if fn == nil {
		return nil, options{}, &InvalidError{Field: "fn", Reason: "must not be nil"}
	}
	o, err := buildOptions(ttl, opts)
	if err != nil {
		return nil, options{}, err
	}
	if m.stopping.Load() {
		return nil, options{}, ErrClosed
	}
	if err := m.checkClaim(o.claim); err != nil {
		return nil, options{}, err
	}
	if err := m.checkMaxHold(o.maxHold); err != nil {
		return nil, options{}, err
	}
	c := &call{}
	m.initLock(&c.l, key, ttl)
	c.l.fixedOwner, c.l.claim, c.l.maxHold = o.owner, o.claim, o.maxHold
	return c, o, nil
}

// callWhileHeld calls fn while l is held, watches the lock meanwhile, and
// releases it afterwards whatever happens.
func (m *Manager) callWhileHeld(ctx context.Context, c *call, fn Func, o *options) (err error) {
	l, h := &c.l, &c.h
	owner, fence, expiresAt, _ := l.current()
	fnCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	h.init(l, owner, fence, cancel, o)
	h.w.Arm(ctx, expiresAt)
	if !m.register(h) {
		h.w.Abandon()
		l.releaseOwner(ctx, owner)
		return ErrClosed
	}

	returned := false
	defer func() {
		if !returned { // fn panicked or called runtime.Goexit: release, then let it go on
			m.finish(ctx, h)
		}
	}()
	fnErr := fn(fnCtx, l)
	returned = true
	relErr := m.finish(ctx, h)
	return h.result(fnErr, relErr)
}

// finish stops watching h's lock and releases it. h stays registered
// until then, so that Shutdown waits for the release too.
//
// The release goes out on the caller's context while that is still live
// (creating a timer per call is a large share of a Try on a fast backend),
// bounded by WithReleaseTimeout when given.
// When the caller's context has ended, before or during that attempt, the
// release goes to the background (cleanUp), bounded by cleanupTimeout, so
// that Try and Block return by the caller's deadline; the key is free as
// soon as the backend answers, and by the TTL if it never does. Releases
// are owner-guarded, so the second attempt is always safe.
func (m *Manager) finish(ctx context.Context, h *heldWatch) error {
	h.w.Stop()
	defer m.unregister(h)
	if m.closed.Load() {
		return nil
	}
	l := h.l
	l.op.Lock()
	defer l.op.Unlock()
	if lost := h.w.Err(); lost != nil {
		m.releaseLost(ctx, h, lost)
	}
	owner, _, _, held := l.current()
	if !held {
		return nil
	}
	if ctx.Err() == nil {
		rctx := ctx
		if h.releaseTimeout > 0 {
			var cancel context.CancelFunc
			rctx, cancel = context.WithTimeout(ctx, h.releaseTimeout)
			defer cancel()
		}
		if err := l.releaseGrant(rctx, owner); err == nil || rctx.Err() == nil {
			return err
		}
	}
	l.markReleased(owner)
	l.cleanUpWithin(owner, cmp.Or(h.releaseTimeout, cleanupTimeout))
	return nil
}

// releaseLost releases the grant that h reported lost, when the backend may
// still hold it for r's owner: the estimate errs early (ErrLostExpired,
// and ErrLostMaxHold, told a safety margin before a cap counted from the
// sending), and a refresh whose answer was lost (a timeout here) may still
// have been applied there and extended the grant (ErrLostUnreachable).
// Either way the next holder would otherwise wait for up to a whole TTL,
// or the margin. The release is owner-guarded: it never frees someone
// else's grant.
//
// After an expiry the backend is presumably reachable, and the release is
// made before Try or Block returns (while the caller's ctx lives); after an
// outage it runs in the background, so that the caller learns of the loss
// at once. Close cancels it and waits for it.
func (m *Manager) releaseLost(ctx context.Context, h *heldWatch, lost *LostError) {
	switch lost.Reason {
	case ErrLostExpired, ErrLostMaxHold:
		h.l.releaseOwner(ctx, h.owner)
	case ErrLostUnreachable:
		h.l.cleanUp(h.owner)
	}
}

// result decides what Try and Block return.
func (h *heldWatch) result(fnErr, relErr error) error {
	if lost := h.w.Err(); lost != nil {
		if fnErr == nil || errors.Is(fnErr, context.Canceled) || errors.Is(fnErr, ErrLost) {
			return lost
		}
		return errors.Join(lost, fnErr)
	}
	if fnErr != nil {
		return fnErr
	}
	if relErr != nil {
		h.l.m.logger.Warn("release after callback failed", "key", h.l.key, "error", relErr)
	}
	return nil
}
