package heldwatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zerotal/lock/drivers"
)

// errNoAnswer is the cause of a loss while a refresh was still waiting for
// the backend at the stop point.
var errNoAnswer = drivers.Unavailable("refresh", fmt.Errorf("no answer in time: %w", context.DeadlineExceeded))

// RefreshWhileHeld is the refresher goroutine of a Watch with refresh,
// started once the watch is registered: it extends the lock every interval
// until stopped. A refresh that finds the lock gone loses it at once, and
// so does one refused for the credentials (refused); any other backend
// error is retried at half the interval until the stop point, where
// checkExpiry loses it with the error as the cause. Once the grant's
// estimated expiry is its cap (Options.Cap) no refresh can move it: the
// loop ends, and the registry's timer loses the grant at the cap's stop
// point.
func (w *Watch) RefreshWhileHeld() {
	defer close(w.loop.done)
	timer := time.NewTimer(w.opts.Every)
	defer timer.Stop()
	for {
		select {
		case <-w.loop.ctx.Done():
			return
		case <-timer.C:
		}
		st, expiresAt := w.grant.State()
		switch st {
		case Released:
			return
		case Lost:
			w.lose(drivers.ErrLostTaken, nil)
			return
		}
		expiresAt = w.capped(expiresAt)
		if w.atCap(expiresAt) {
			return
		}
		stop := expiresAt.Add(-w.opts.Margin)
		budget := time.Until(stop)
		if budget <= 0 { // the process stalled past the stop point
			w.checkExpiry()
			return
		}
		ok, err := w.refreshOnce(budget)
		if w.loop.ctx.Err() != nil {
			return
		}
		switch {
		case err == nil && ok:
			timer.Reset(w.opts.Every)
		case err == nil:
			if st, _ := w.grant.State(); st == Lost {
				w.lose(drivers.ErrLostTaken, nil)
			}
			return
		case refused(err):
			w.lose(drivers.ErrLostRefused, err)
			return
		default:
			w.grant.RefreshFailed(err)
			left := time.Until(stop)
			if left <= 0 {
				w.checkExpiry()
				return
			}
			timer.Reset(min(max(w.opts.Every/2, time.Millisecond), left))
		}
	}
}

// refused reports a refresh the backend refused for the credentials: the
// token was revoked (ErrUnauthorized) or lost the right to the key
// (ErrForbidden). The backend answered, and answers every later refresh
// alike until an operator restores the credential, which nothing here can
// wait for: retrying until the stop point would only take from the time
// the holder has to stop, and report the refusal as an unreachable
// backend.
func refused(err error) bool {
	return errors.Is(err, drivers.ErrUnauthorized) || errors.Is(err, drivers.ErrForbidden)
}

// refreshOnce refreshes the watched grant, giving the backend no longer
// than the time left before the stop point: an answer after that comes too
// late. It records the outcome for expiryReason.
func (w *Watch) refreshOnce(budget time.Duration) (bool, error) {
	ctx, cancel := context.WithTimeout(w.loop.ctx, budget)
	defer cancel()
	ok, err := w.grant.Refresh(ctx, w.beginRefresh)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && w.loop.ctx.Err() == nil {
		err = errNoAnswer // the backend was too slow: unreachable in time
	}
	w.mu.Lock()
	w.refreshing = false
	switch {
	case err != nil:
		w.refreshErr = err
	case ok:
		w.refreshErr = nil
	}
	w.mu.Unlock()
	return ok, err
}

// beginRefresh records that a refresh is waiting for the backend, so that
// a stop point passing meanwhile blames the backend (expiryReason).
func (w *Watch) beginRefresh() {
	w.mu.Lock()
	w.refreshing = true
	w.mu.Unlock()
}

// expiryReason says why the stop point passed without a refresh: refreshes
// failed or did not come back (the backend is unreachable), or there were
// none to make (no refresh, or the process stalled).
func (w *Watch) expiryReason() (drivers.LostReason, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.refreshErr != nil:
		return drivers.ErrLostUnreachable, w.refreshErr
	case w.refreshing:
		return drivers.ErrLostUnreachable, errNoAnswer
	default:
		return drivers.ErrLostExpired, nil
	}
}
