package lock

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// run watches the lock held for one callback of Try or Block. With refresh,
// a goroutine extends the lock every interval; without, the registry's
// expiry watch calls checkExpiry when the TTL (as estimated here) runs out. Either way, losing
// the lock cancels the callback's context with a *LostError as its cause.
type run struct {
	l       *Lock
	owner   string
	fence   uint64
	cancel  context.CancelCauseFunc // cancels the callback's context
	refresh bool
	every   time.Duration
	slot    int // in Manager.runs; -1 in its overflow

	loop *refreshLoop // refresh mode only

	mu       sync.Mutex // guards the fields below
	finished bool       // the callback returned: nothing may be reported any more
	lostErr  *LostError
	closed   bool // cancelled by Manager.Close

	// deadline is when the TTL runs out as estimated here (a monotime), for
	// the registry's expiry watch; 0 when not watched.
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
	r.refresh, r.every = o.refresh, o.refreshEvery
	if r.refresh {
		// The loop lives only as long as the callback: it is stopped by
		// stop or Close, never by the caller's context, whose end already
		// cancels the callback.
		ctx, cancel := context.WithCancel(context.Background())
		r.loop = &refreshLoop{ctx: ctx, cancel: cancel, done: make(chan struct{})}
	}
}

// watch sets the deadline the registry watches in no-refresh mode (the
// refresher goroutine is started by Manager.register). It runs before r is
// registered.
//
// When the caller's context ends no later than the lock's estimated expiry,
// there is nothing to watch: the callback's context is cancelled by then
// anyway.
func (r *run) watch(ctx context.Context, expiresAt time.Time) {
	if r.refresh {
		return
	}
	if deadline, ok := ctx.Deadline(); ok && !deadline.After(expiresAt) {
		return
	}
	r.deadline.Store(monoOf(expiresAt))
}

// stop ends the watch; after it returns, lostErr and closed no longer change.
func (r *run) stop() {
	r.mu.Lock()
	r.finished = true
	r.mu.Unlock()
	if r.refresh {
		r.loop.cancel()
		<-r.loop.done
	}
}

// closeByManager is Close's way of ending the run.
func (r *run) closeByManager() {
	r.mu.Lock()
	if r.finished || r.lostErr != nil {
		r.mu.Unlock()
		return
	}
	r.closed = true
	r.mu.Unlock()
	if r.refresh {
		r.loop.cancel()
	}
	r.cancel(ErrClosed)
}

// lose reports the lock lost: the handle lets go of it and the callback's
// context is cancelled with the *LostError as its cause.
func (r *run) lose(cause error) {
	r.mu.Lock()
	if r.finished || r.closed || r.lostErr != nil {
		r.mu.Unlock()
		return
	}
	lost := &LostError{Key: r.l.key, Fence: r.fence, Cause: cause}
	r.lostErr = lost
	r.mu.Unlock()
	r.l.markLost(r.owner)
	r.l.m.logger.Warn("lock lost while held", "key", r.l.key, "fence", r.fence, "error", cause)
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

// checkExpiry runs when the estimated TTL has run out in no-refresh mode.
func (r *run) checkExpiry() {
	st, expiresAt := r.state()
	switch st {
	case grantReleased:
		r.deadline.Store(0)
		return
	case grantLost: // a manual Refresh found it gone
		r.deadline.Store(0)
		r.lose(nil)
		return
	}
	if time.Now().Before(expiresAt) { // the callback refreshed it by hand
		d := monoOf(expiresAt)
		r.deadline.Store(d)
		r.l.m.runs.watch(d)
		return
	}
	r.deadline.Store(0)
	r.lose(ErrExpired)
}

// refreshWhileHeld extends the lock every interval until stopped. A refresh
// that finds the lock gone loses it at once; a backend error is retried at
// half the interval until the estimated expiry passes, and then loses it
// with the error as the cause.
func (r *run) refreshWhileHeld() {
	defer r.l.m.wg.Done()
	defer close(r.loop.done)
	timer := time.NewTimer(r.every)
	defer timer.Stop()
	var lastErr error // of the failed refreshes since the last success
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
			r.lose(nil)
			return
		}
		remaining := time.Until(expiresAt)
		if remaining <= 0 {
			if lastErr == nil {
				lastErr = ErrExpired // the process stalled past the TTL
			}
			r.lose(lastErr)
			return
		}
		ok, err := r.refreshOnce(remaining)
		if r.loop.ctx.Err() != nil {
			return
		}
		switch {
		case err == nil && ok:
			lastErr = nil
			timer.Reset(r.every)
		case err == nil:
			if st, _ := r.state(); st == grantLost {
				r.lose(nil)
			}
			return
		default:
			r.l.m.logger.Debug("refresh failed, retrying", "key", r.l.key, "error", err)
			lastErr = err
			left := time.Until(expiresAt)
			if left <= 0 {
				r.lose(err)
				return
			}
			timer.Reset(min(max(r.every/2, time.Millisecond), left))
		}
	}
}

// refreshOnce refreshes the watched grant, giving the backend no longer
// than the time the lock has left: an answer after that comes too late.
func (r *run) refreshOnce(budget time.Duration) (bool, error) {
	ctx, cancel := context.WithTimeout(r.loop.ctx, budget)
	defer cancel()
	l := r.l
	l.op.Lock()
	defer l.op.Unlock()
	if st, _ := r.state(); st != grantHeld {
		return false, nil
	}
	return l.refreshLocked(ctx)
}
