package lock

import (
	"context"
	"time"

	"github.com/zerotal/lock/internal/heldwatch"
)

// heldWatch watches the lock held for one callback of Try or Block: it
// keeps it refreshed when WithRefresh asks for it, and cancels the
// callback's context when the lock is lost, or about to be. The timing
// rules live in heldwatch; heldWatch is the handle's side of it, the
// heldwatch.Grant the watch looks after.
type heldWatch struct {
	l     *Lock
	owner string // the grant watched; the handle may move on to another
	w     heldwatch.Watch
	// releaseTimeout bounds the release at the end (WithReleaseTimeout).
	releaseTimeout time.Duration
}

func (h *heldWatch) init(l *Lock, owner string, fence uint64, cancel context.CancelCauseFunc, o *options) {
	h.l, h.owner, h.releaseTimeout = l, owner, o.release
	var capAt func() time.Time // nil without a cap: no closure on every call
	if l.maxHold > 0 {
		capAt = func() time.Time { return l.holdCap(owner) }
	}
	h.w.Init(h, l.key, fence, cancel, heldwatch.Options{
		Refresh: o.refresh,
		Every:   o.refreshEvery,
		Margin:  o.margin,
		Cap:     capAt,
	})
}

// State implements heldwatch.Grant.
func (h *heldWatch) State() (heldwatch.State, time.Time) {
	l := h.l
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.owner != h.owner:
		return heldwatch.Released, time.Time{} // the callback re-acquired: a new grant it manages itself
	case l.held:
		return heldwatch.Held, l.expiresAt
	case l.lost:
		return heldwatch.Lost, time.Time{}
	default:
		return heldwatch.Released, time.Time{}
	}
}

// Refresh implements heldwatch.Grant: it serialises with the callback's
// own calls on the handle, and refreshes only the grant watched.
func (h *heldWatch) Refresh(ctx context.Context, begin func()) (bool, error) {
	l := h.l
	l.op.Lock()
	defer l.op.Unlock()
	if st, _ := h.State(); st != heldwatch.Held {
		return false, nil
	}
	begin()
	return l.refreshLocked(ctx)
}

// Lost implements heldwatch.Grant: the handle lets go of the grant.
func (h *heldWatch) Lost(lost *LostError) {
	h.l.markLost(h.owner)
	h.l.m.logger.Warn("lock lost while held", "key", h.l.key, "fence", lost.Fence, "error", lost)
}

// RefreshFailed implements heldwatch.Grant.
func (h *heldWatch) RefreshFailed(err error) {
	h.l.m.logger.Debug("refresh failed, retrying", "key", h.l.key, "error", err)
}

// refreshWhileHeld is the refresher goroutine, counted in the Manager's
// wait group so that Close waits for it.
func (h *heldWatch) refreshWhileHeld() {
	defer h.l.m.wg.Done()
	h.w.RefreshWhileHeld()
}
