package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zerotal/lock/drivers"
)

// run watches the lock held for one callback of Try or Block.
//
// The registry's expiry watch calls checkExpiry at the stop point: the
// lock's estimated expiry less the safety margin, the last moment the
// holder can be told in time to stop before the backend may hand the key
// on. With refresh, a goroutine extends the lock every interval, which
// moves the stop point on; the watch, not the refresher, decides that time
// is up, so a refresh that hangs in the driver cannot delay the signal.
// Either way, losing the lock cancels the callback's context with a
// *LostError as its cause.
type run struct {
	l       *Lock
	owner   string
	fence   uint64
	cancel  context.CancelCauseFunc // cancels the callback's context
	refresh bool
	every   time.Duration
	margin  time.Duration // the stop point is this long before the estimated expiry
	slot    int           // in Manager.runs; -1 in its overflow

	loop *refreshLoop // refresh mode only

	mu         sync.Mutex // guards the fields below
	finished   bool       // the callback returned: nothing may be reported any more
	lostErr    *LostError // also set by Manager.Close (reason ErrLostClosed)
	refreshErr error      // of the failed refreshes since the last success
	refreshing bool       // a refresh is waiting for the backend

	// deadline is the stop point (a monotime) the registry's expiry watch
	// waits for; 0 when not watched.
	deadline atomic.Int64
}

// refreshLoop is the refresher goroutine's context and exit.
type refreshLoop struct {
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

func (r *run) init(l *Lock, owner string, fence uint64, cancel context.CancelCauseFunc, o *options) {
	r.l, r.owner, r.fence, r.cancel = l, owner, fence, cancel
	r.refresh, r.every, r.margin = o.refresh, o.refreshEvery, o.margin
	if r.refresh {
		// The loop lives only as long as the callback: it is stopped by
		// stop, Close or a loss, never by the caller's context, whose end
		// already cancels the callback.
		ctx, cancel := context.WithCancel(context.Background())
		r.loop = &refreshLoop{ctx: ctx, cancel: cancel, done: make(chan struct{})}
	}
}

// watch sets the stop point the registry watches (the refresher goroutine
// is started by Manager.register). It runs before r is registered.
//
// When the caller's context ends no later than the stop point, there is
// nothing to watch: the callback's context is cancelled by then anyway,
// and refreshes only move the stop point later.
func (r *run) watch(ctx context.Context, expiresAt time.Time) {
	stop := expiresAt.Add(-r.margin)
	if deadline, ok := ctx.Deadline(); ok && !deadline.After(stop) {
		return
	}
	r.deadline.Store(monoOf(stop))
}

// stop ends the watch; after it returns, lostErr no longer changes.
func (r *run) stop() {
	r.mu.Lock()
	r.finished = true
	r.mu.Unlock()
	if r.refresh {
		r.loop.cancel()
		<-r.loop.done
	}
}

// closeByManager is Close's and Shutdown's way of ending the run: the
// callback's context is cancelled with ErrLostClosed and refreshes stop.
// The handle still holds the grant, so that finish releases it when the
// callback returns (after Shutdown; after Close the driver is closed, and
// the grant is left to its TTL).
func (r *run) closeByManager() {
	r.mu.Lock()
	if r.finished || r.lostErr != nil {
		r.mu.Unlock()
		return
	}
	lost := &LostError{Key: r.l.key, Fence: r.fence, Reason: ErrLostClosed}
	r.lostErr = lost
	r.mu.Unlock()
	if r.refresh {
		r.loop.cancel()
	}
	r.cancel(lost)
}

// lose reports the lock lost: the handle lets go of it, a refresh in
// flight is abandoned, and the callback's context is cancelled with the
// *LostError as its cause.
func (r *run) lose(reason LostReason, cause error) {
	r.mu.Lock()
	if r.finished || r.lostErr != nil {
		r.mu.Unlock()
		return
	}
	lost := &LostError{Key: r.l.key, Fence: r.fence, Reason: reason, Cause: cause}
	r.lostErr = lost
	r.mu.Unlock()
	r.deadline.Store(0)
	if r.refresh {
		r.loop.cancel()
	}
	r.l.markLost(r.owner)
	r.l.m.logger.Warn("lock lost while held", "key", r.l.key, "fence", r.fence, "error", lost)
	r.cancel(lost)
}

// grant says what became of the grant being watched.
type grantState int

const (
	grantHeld     grantState = iota
	grantLost                // found gone: report it
	grantReleased            // let go of by the callback itself: stop quietly
)

func (r *run) state() (grantState, time.Time) {
	l := r.l
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.owner != r.owner:
		return grantReleased, time.Time{} // the callback re-acquired: a new grant it manages itself
	case l.held:
		return grantHeld, l.expiresAt
	case l.lost:
		return grantLost, time.Time{}
	default:
		return grantReleased, time.Time{}
	}
}

// checkExpiry runs when the stop point has passed, as the registry's
// expiry watch sees it, or as the refresher does.
func (r *run) checkExpiry() {
	st, expiresAt := r.state()
	switch st {
	case grantReleased:
		r.deadline.Store(0)
		return
	case grantLost: // a manual Refresh found it gone
		r.deadline.Store(0)
		r.lose(ErrLostTaken, nil)
		return
	}
	if stop := expiresAt.Add(-r.margin); time.Now().Before(stop) { // refreshed since
		d := monoOf(stop)
		r.deadline.Store(d)
		r.l.m.runs.watch(d)
		return
	}
	r.deadline.Store(0)
	r.lose(r.expiryReason())
}

// errNoAnswer is the cause of a loss while a refresh was still waiting for
// the backend at the stop point.
var errNoAnswer = drivers.Unavailable("refresh", fmt.Errorf("no answer in time: %w", context.DeadlineExceeded))

// expiryReason says why the stop point passed without a refresh: refreshes
// failed or did not come back (the backend is unreachable), or there were
// none to make (no refresh, or the process stalled).
func (r *run) expiryReason() (LostReason, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.refreshErr != nil:
		return ErrLostUnreachable, r.refreshErr
	case r.refreshing:
		return ErrLostUnreachable, errNoAnswer
	default:
		return ErrLostExpired, nil
	}
}

// refreshWhileHeld extends the lock every interval until stopped. A refresh
// that finds the lock gone loses it at once; a backend error is retried at
// half the interval until the stop point, where checkExpiry loses it with
// the error as the cause.
func (r *run) refreshWhileHeld() {
	defer r.l.m.wg.Done()
	defer close(r.loop.done)
	timer := time.NewTimer(r.every)
	defer timer.Stop()
	for {
		select {
		case <-r.loop.ctx.Done():
			return
		case <-timer.C:
		}
		st, expiresAt := r.state()
		switch st {
		case grantReleased:
			return
		case grantLost:
			r.lose(ErrLostTaken, nil)
			return
		}
		stop := expiresAt.Add(-r.margin)
		budget := time.Until(stop)
		if budget <= 0 { // the process stalled past the stop point
			r.checkExpiry()
			return
		}
		ok, err := r.refreshOnce(budget)
		if r.loop.ctx.Err() != nil {
			return
		}
		switch {
		case err == nil && ok:
			timer.Reset(r.every)
		case err == nil:
			if st, _ := r.state(); st == grantLost {
				r.lose(ErrLostTaken, nil)
			}
			return
		default:
			r.l.m.logger.Debug("refresh failed, retrying", "key", r.l.key, "error", err)
			left := time.Until(stop)
			if left <= 0 {
				r.checkExpiry()
				return
			}
			timer.Reset(min(max(r.every/2, time.Millisecond), left))
		}
	}
}

// refreshOnce refreshes the watched grant, giving the backend no longer
// than the time left before the stop point: an answer after that comes too
// late. It records the outcome for expiryReason.
func (r *run) refreshOnce(budget time.Duration) (bool, error) {
	ctx, cancel := context.WithTimeout(r.loop.ctx, budget)
	defer cancel()
	l := r.l
	l.op.Lock()
	defer l.op.Unlock()
	if st, _ := r.state(); st != grantHeld {
		return false, nil
	}
	r.mu.Lock()
	r.refreshing = true
	r.mu.Unlock()
	ok, err := l.refreshLocked(ctx)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && r.loop.ctx.Err() == nil {
		err = errNoAnswer // the backend was too slow: unreachable in time
	}
	r.mu.Lock()
	r.refreshing = false
	switch {
	case err != nil:
		r.refreshErr = err
	case ok:
		r.refreshErr = nil
	}
	r.mu.Unlock()
	return ok, err
}
