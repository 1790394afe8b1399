package lock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/zerotal/lock/drivers"
)

// waitLocked waits up to timeout for a fresh grant. l.op must be held and
// the handle must not hold the lock.
func (l *Lock) waitLocked(ctx context.Context, timeout, retryDelay time.Duration) error {
	if err := ctx.Err(); err != nil {
		return l.waitCancelled(ctx)
	}
	var first *NotAcquiredError // the answer of an attempt before the wait
	var firstAt time.Time
	if l.m.caps.InstantAcquire {
		// A free key is taken without a timer, a registration or a
		// cancellable call; a busy one is waited for as usual (an error
		// shows again there).
		ok, held, err := l.acquireLocked(ctx)
		if ok && err == nil {
			return nil
		}
		first, firstAt = held, time.Now()
	}
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Manager.Close and Shutdown end the wait at once: not every driver's
	// Close interrupts a wait in flight (a handle on a shared engine, an
	// HTTP request to the cluster), and nobody should wait on a Manager
	// that takes no more locks.
	l.m.waits.add(&l.wait, cancel)
	defer l.wait.remove()
	var err error
	if l.m.caps.Wait {
		err = l.waitPushed(ctx, waitCtx, retryDelay)
	} else {
		err = l.waitPolling(ctx, waitCtx, retryDelay)
	}
	// The wait's own end may not say who holds the key or how long it has
	// left; the attempt before it did.
	if na, ok := err.(*NotAcquiredError); ok && first != nil {
		if na.HolderTTL == 0 {
			na.HolderTTL = max(first.HolderTTL-time.Since(firstAt), 0)
		}
		if na.Holder == "" {
			na.Holder = first.Holder
		}
	}
	return err
}

// waitPushed waits with the driver's own queue (Request.Wait).
func (l *Lock) waitPushed(ctx, waitCtx context.Context, retryDelay time.Duration) error {
	for {
		owner := l.nextOwner()
		sent := time.Now()
		r := l.request(owner)
		r.Wait, r.WaitOptions = true, drivers.WaitOptions{RetryDelay: retryDelay, OwnerReused: l.fixedOwner != ""}
		g, err := l.m.driver.Acquire(waitCtx, r)
		fence := g.Fence()
		if err != nil {
			if waitCtx.Err() == nil {
				// The driver cleans up after a cancelled wait itself
				// (drivers.Request.Wait), but not after an outage.
				l.abandon(waitCtx, owner, err)
			}
			return l.waitFailed(ctx, waitCtx, "wait", err)
		}
		l.granted(owner, fence, sent)
		// The grant happened somewhere between sending and now, and
		// ExpiresAt and the cap's estimate count from sending. After a
		// long wait they are far too early, so anchor them again with a
		// refresh (capestimate.go).
		if time.Since(sent) <= l.anchorAfter() {
			return nil
		}
		l.loosenCap(owner)
		ok, err := l.refreshLocked(ctx)
		if err != nil {
			l.markLost(owner)
			if errors.Is(err, ErrUnavailable) {
				l.cleanUp(owner)
			} else {
				l.releaseOwner(ctx, owner)
			}
			return err
		}
		if ok {
			return nil
		}
		if waitCtx.Err() != nil { // gone before we could use it, and no time left
			return l.waitFailed(ctx, waitCtx, "wait", waitCtx.Err())
		}
	}
}

// waitPolling calls Acquire every retry delay (with a little jitter) until
// it succeeds or the wait ends.
func (l *Lock) waitPolling(ctx, waitCtx context.Context, retryDelay time.Duration) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	var held *NotAcquiredError // the backend's last answer: the key is held
	for {
		ok, answer, err := l.acquireLocked(waitCtx)
		if err != nil {
			if held != nil && waitCtx.Err() != nil && ctx.Err() == nil {
				err = held // the timeout cut off a poll; the last answer stands
			}
			return l.waitFailed(ctx, waitCtx, "acquire", err)
		}
		if ok {
			return nil
		}
		held = answer
		timer.Reset(jitter(retryDelay))
		select {
		case <-waitCtx.Done():
			return l.waitFailed(ctx, waitCtx, "wait", held)
		case <-timer.C:
		}
	}
}

// waitFailed turns the end of a wait into the right error: the caller's own
// cancellation, ErrClosed when the Manager was closed, a *NotAcquiredError
// for the timeout, or the backend error.
//
// A wait that ran out is contention only if the backend's last word was
// that the key is held: when its last attempt failed or got no answer
// (err matches ErrUnavailable), the caller is told of the outage instead,
// with that error, also when its own ctx ended. Code that reads
// ErrNotAcquired as "someone else is on it" must not skip its work
// because the backend was down.
func (l *Lock) waitFailed(ctx, waitCtx context.Context, op string, err error) error {
	outage := errors.Is(err, ErrUnavailable)
	switch {
	case l.m.stopping.Load() && ctx.Err() == nil:
		return fmt.Errorf("lock: waiting for %q: %w", l.key, ErrClosed)
	case ctx.Err() != nil && outage:
		return fmt.Errorf("lock: waiting for %q: %w: %w", l.key, ctx.Err(), err)
	case ctx.Err() != nil:
		return l.waitCancelled(ctx)
	case waitCtx.Err() != nil && outage:
		return fmt.Errorf("lock: waiting for %q: timed out: %w", l.key, err)
	case waitCtx.Err() != nil:
		na := &NotAcquiredError{Key: l.key}
		if held, ok := errors.AsType[*NotAcquiredError](err); ok && held != nil {
			na.HolderTTL, na.Holder = held.HolderTTL, held.Holder
		}
		return na
	default:
		return wrapOp(op, l.key, err)
	}
}

func (l *Lock) waitCancelled(ctx context.Context) error {
	return fmt.Errorf("lock: waiting for %q: %w", l.key, ctx.Err())
}

// jitter spreads pollers out: d plus up to a tenth of d.
func jitter(d time.Duration) time.Duration {
	if d < 10 {
		return d
	}
	return d + rand.N(d/10)
}
