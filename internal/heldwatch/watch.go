// Package heldwatch watches the locks held for the callbacks of the lock
// package's Try and Block: it keeps a held lock refreshed when asked to,
// and signals its loss by cancelling the callback's context.
//
// A Watch looks after one grant through the Grant interface, which the
// lock package's handle implements; a Registry holds every Watch of one
// Manager, so that Close can reach them, and tells the ones without refresh
// when their stop point passes. The package knows nothing of drivers or
// handles beyond that interface, so that the timing rules (stop points,
// retry pacing, why a loss happened) live in one place.
package heldwatch

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zerotal/lock/drivers"
)

// State says what became of the grant being watched.
type State int

const (
	Held     State = iota // still held, as far as the handle knows
	Lost                  // found gone: report it
	Released              // let go of by the callback itself: stop quietly
)

// Grant is the held lock a Watch looks after.
type Grant interface {
	// State says what became of the grant and, while it is held, when it
	// is estimated to expire.
	State() (State, time.Time)
	// Refresh extends the grant at the backend, serialised with the
	// handle's other backend calls, and reports whether it is still held.
	// When the grant is no longer held it returns false, nil without
	// calling begin; otherwise it calls begin before asking the backend.
	Refresh(ctx context.Context, begin func()) (bool, error)
	// Lost is told of a loss the watch found, before the callback's
	// context is cancelled with it: the handle lets go of the grant. It is
	// not told of Close, which leaves the grant to be released.
	Lost(*drivers.LostError)
	// RefreshFailed is told of a failed refresh that will be retried.
	RefreshFailed(error)
}

// Options says how to watch a grant.
type Options struct {
	Refresh bool          // extend the grant every Every while the callback runs
	Every   time.Duration // the refresh interval
	Margin  time.Duration // the stop point is this long before the estimated expiry
	// Cap, when set, tells the grant's cap on total hold time as the
	// holder estimates it now (never later than the backend's; the
	// estimate may rise, never past the real cap), or the zero time: no
	// estimated expiry counts past it, refreshes stop once the grant
	// reaches it, and the stop point it sets is a loss of reason
	// ErrLostMaxHold. nil: no cap.
	Cap func() time.Time
}

// Watch watches the lock held for one callback of Try or Block.
//
// The registry's expiry timer calls checkExpiry at the stop point: the
// lock's estimated expiry less the safety margin, the last moment the
// holder can be told in time to stop before the backend may hand the key
// on. With refresh, a goroutine extends the lock every interval, which
// moves the stop point on; the watch, not the refresher, decides that time
// is up, so a refresh that hangs in the driver cannot delay the signal.
// Either way, losing the lock cancels the callback's context with a
// *drivers.LostError as its cause.
//
// The zero Watch is ready for Init; it must not be copied after that.
type Watch struct {
	grant  Grant
	key    string // as the caller wrote it, for the LostError
	fence  uint64
	cancel context.CancelCauseFunc // cancels the callback's context
	opts   Options
	reg    *Registry // set by Registry.Add
	slot   int       // in reg's slots; -1 in its overflow

	loop *refreshLoop // refresh mode only

	mu         sync.Mutex         // guards the fields below
	finished   bool               // the callback returned: nothing may be reported any more
	lostErr    *drivers.LostError // also set by Close (reason ErrLostClosed)
	refreshErr error              // of the failed refreshes since the last success
	refreshing bool               // a refresh is waiting for the backend

	// deadline is the stop point (a monotime) the registry's expiry timer
	// waits for; 0 when not watched.
	deadline atomic.Int64
}

// refreshLoop is the refresher goroutine's context and exit.
type refreshLoop struct {
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

// Init sets w up to watch g, the grant of key with the given fence, for a
// callback whose context cancel cancels.
func (w *Watch) Init(g Grant, key string, fence uint64, cancel context.CancelCauseFunc, o Options) {
	w.grant, w.key, w.fence, w.cancel, w.opts = g, key, fence, cancel, o
	if o.Refresh {
		// The loop lives only as long as the callback: it is stopped by
		// Stop, Close or a loss, never by the caller's context, whose end
		// already cancels the callback.
		ctx, cancel := context.WithCancel(context.Background())
		w.loop = &refreshLoop{ctx: ctx, cancel: cancel, done: make(chan struct{})}
	}
}

// Refreshes reports whether w needs its refresher goroutine
// (RefreshWhileHeld) started once it is registered.
func (w *Watch) Refreshes() bool { return w.opts.Refresh }

// Arm sets the stop point the registry watches, from the grant's estimated
// expiry. It runs before w is registered.
//
// When the caller's context ends no later than the stop point, there is
// nothing to watch: the callback's context is cancelled by then anyway,
// and refreshes only move the stop point later.
func (w *Watch) Arm(ctx context.Context, expiresAt time.Time) {
	stop := w.stopPoint(expiresAt)
	if deadline, ok := ctx.Deadline(); ok && !deadline.After(stop) {
		return
	}
	w.deadline.Store(monoOf(stop))
}

// capped is expiresAt held to the cap: the backend lets no grant outlive
// it.
func (w *Watch) capped(expiresAt time.Time) time.Time {
	if c := w.capAt(); !c.IsZero() && c.Before(expiresAt) {
		return c
	}
	return expiresAt
}

// atCap reports whether a grant estimated to expire at expiresAt ends at
// its cap, where no refresh moves it.
func (w *Watch) atCap(expiresAt time.Time) bool {
	c := w.capAt()
	return !c.IsZero() && !expiresAt.Before(c)
}

// capAt is the cap's estimate now, or the zero time.
func (w *Watch) capAt() time.Time {
	if w.opts.Cap == nil {
		return time.Time{}
	}
	return w.opts.Cap()
}

// stopPoint is the last moment the holder can be told in time, for a
// grant estimated to expire at expiresAt: a margin before that, or before
// the cap.
func (w *Watch) stopPoint(expiresAt time.Time) time.Time {
	return w.capped(expiresAt).Add(-w.opts.Margin)
}

// Abandon gives up a watch that was never registered: the refresher it
// was set up for never starts.
func (w *Watch) Abandon() {
	if w.loop != nil {
		w.loop.cancel()
	}
}

// Stop ends the watch when the callback returns; after it returns, Err no
// longer changes.
func (w *Watch) Stop() {
	w.mu.Lock()
	w.finished = true
	w.mu.Unlock()
	if w.opts.Refresh {
		w.loop.cancel()
		<-w.loop.done
	}
}

// Err returns the loss reported, or nil. Read it after Stop.
func (w *Watch) Err() *drivers.LostError { return w.lostErr }

// Close is the Manager's way of ending the watch (Close and Shutdown): the
// callback's context is cancelled with ErrLostClosed and refreshes stop.
// The handle still holds the grant, so that it is released when the
// callback returns (after Shutdown; after Close the driver is closed, and
// the grant is left to its TTL).
func (w *Watch) Close() {
	w.mu.Lock()
	if w.finished || w.lostErr != nil {
		w.mu.Unlock()
		return
	}
	lost := &drivers.LostError{Key: w.key, Fence: w.fence, Reason: drivers.ErrLostClosed}
	w.lostErr = lost
	w.mu.Unlock()
	if w.opts.Refresh {
		w.loop.cancel()
	}
	w.cancel(lost)
}

// lose reports the lock lost: the handle lets go of it, a refresh in
// flight is abandoned, and the callback's context is cancelled with the
// *LostError as its cause.
func (w *Watch) lose(reason drivers.LostReason, cause error) {
	w.mu.Lock()
	if w.finished || w.lostErr != nil {
		w.mu.Unlock()
		return
	}
	lost := &drivers.LostError{Key: w.key, Fence: w.fence, Reason: reason, Cause: cause}
	w.lostErr = lost
	w.mu.Unlock()
	w.deadline.Store(0)
	if w.opts.Refresh {
		w.loop.cancel()
	}
	w.grant.Lost(lost)
	w.cancel(lost)
}
