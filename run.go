package lock

import (
	"context"
	"sync"
	"time"
)

// run watches the lock held for one callback of Try or Block. With refresh,
// a goroutine extends the lock every interval; without, a timer fires when
// the TTL (as estimated here) runs out. Either way, losing the lock cancels
// the callback's context with a *LostError as its cause.
type run struct {
	m       *Manager
	l       *Lock
	owner   string
	fence   uint64
	cancel  context.CancelCauseFunc // cancels the callback's context
	refresh bool
	every   time.Duration
	shard   int // in Manager.runs

	// refresh mode: the loop's context, and its exit.
	loopCtx    context.Context
	cancelLoop context.CancelFunc
	loopDone   chan struct{}

	mu       sync.Mutex // guards the fields below
	finished bool       // the callback returned: nothing may be reported any more
	lostErr  *LostError
	closed   bool        // cancelled by Manager.Close
	timer    *time.Timer // no-refresh mode
}

func (r *run) init(m *Manager, l *Lock, owner string, fence uint64, cancel context.CancelCauseFunc, o options) {
	r.m, r.l, r.owner, r.fence, r.cancel = m, l, owner, fence, cancel
	r.refresh, r.every = o.refresh, o.refreshEvery
	if r.refresh {
		// The loop outlives nothing but the callback: it is stopped by
		// stop or Close, never by the caller's context, whose end already
		// cancels the callback.
		r.loopCtx, r.cancelLoop = context.WithCancel(context.Background())
		r.loopDone = make(chan struct{})
	}
}

// watch arms the expiry timer in no-refresh mode (the refresh goroutine is
// started by Manager.register).
func (r *run) watch() {
	if r.refresh {
		return
	}
	_, _, expiresAt, _ := r.l.current()
	r.mu.Lock()
	if !r.finished {
		r.timer = time.AfterFunc(time.Until(expiresAt), r.checkExpiry)
	}
	r.mu.Unlock()
}

// stop ends the watch; after it returns, lostErr and closed no longer change.
func (r *run) stop() {
	r.mu.Lock()
	r.finished = true
	if r.timer != nil {
		r.timer.Stop()
	}
	r.mu.Unlock()
	if r.refresh {
		r.cancelLoop()
		<-r.loopDone
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
	if r.timer != nil {
		r.timer.Stop()
	}
	r.mu.Unlock()
	if r.refresh {
		r.cancelLoop()
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
	r.m.logger.Warn("lock lost while held", "key", r.l.key, "fence", r.fence, "error", cause)
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
		return
	case grantLost: // a manual Refresh found it gone
		r.lose(nil)
		return
	}
	if d := time.Until(expiresAt); d > 0 { // the callback refreshed it by hand
		r.mu.Lock()
		if !r.finished && !r.closed {
			r.timer.Reset(d)
		}
		r.mu.Unlock()
		return
	}
	r.lose(ErrExpired)
}

// refreshLoop extends the lock every interval until stopped. A refresh that
// finds the lock gone loses it at once; a backend error is retried at half
// the interval until the estimated expiry passes, and then loses it with
// the error as the cause.
func (r *run) refreshLoop() {
	defer r.m.wg.Done()
	defer close(r.loopDone)
	timer := time.NewTimer(r.every)
	defer timer.Stop()
	var lastErr error // of the failed refreshes since the last success
	for {
		select {
		case <-r.loopCtx.Done():
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
		if r.loopCtx.Err() != nil {
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
			r.m.logger.Debug("refresh failed, retrying", "key", r.l.key, "error", err)
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
	ctx, cancel := context.WithTimeout(r.loopCtx, budget)
	defer cancel()
	l := r.l
	l.op.Lock()
	defer l.op.Unlock()
	if st, _ := r.state(); st != grantHeld {
		return false, nil
	}
	return l.refreshLocked(ctx)
}
