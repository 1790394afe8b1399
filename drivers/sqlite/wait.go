package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/zerotal/lock/drivers"
)

// fallbackRetryDelay bounds a waiter's pause when WaitOptions.RetryDelay
// is not set.
const fallbackRetryDelay = 100 * time.Millisecond

// acquireKeyWait blocks until key is granted to owner and returns the fence,
// or returns ctx.Err() (wrapped) when ctx ends first.
//
// Waiters of this handle line up per key in arrival order; the first one
// watches the database. It wakes when any connection commits (seen through
// PRAGMA data_version, or at once for a release through this handle), when
// the holder's deadline passes, or after a jittered pause that grows up to
// opts.RetryDelay; it then reads the key and competes for the write lock
// only if the key looks free. Across processes the order is not FIFO: the
// first waiter of each handle competes.
//
// When ctx ends while a grant is being written, the grant is released with
// a fresh context (the owner token is the caller's, fresh per acquisition),
// so it is never left behind as held.
func (d *Driver) acquireKeyWait(ctx context.Context, key, owner string, ttl time.Duration, opts drivers.WaitOptions) (uint64, error) {
	if err := d.enter(ctx, "acquire wait"); err != nil {
		return 0, err
	}
	t := d.queues.join(key)
	defer d.queues.leave(key, t)
	select {
	case <-t.turn:
	case <-ctx.Done():
		return 0, fmt.Errorf("sqlite: acquire wait: %w", ctx.Err())
	case <-d.done:
		return 0, drivers.ErrClosed
	}
	d.watch.subscribe()
	defer d.watch.unsubscribe()

	retryDelay := opts.RetryDelay
	if retryDelay <= 0 {
		retryDelay = fallbackRetryDelay
	}
	pause := min(d.cfg.PollInterval, retryDelay)
	// The first attempt writes at once: the key is usually free when a
	// waiter reaches the head of its line. Later ones read first, so that
	// waiters do not take the write lock from the processes doing work.
	for attempt := 0; ; attempt++ {
		changed := d.watch.next()
		var h holder
		if attempt > 0 {
			var err error
			if h, err = d.holder(ctx, key); err != nil {
				return 0, err
			}
		}
		now := time.Now()
		if !h.heldAt(now.UnixMicro()) || h.owner == owner {
			fence, ok, err := d.acquireKey(ctx, key, owner, ttl)
			if err != nil {
				d.abandon(ctx, key, owner)
				return 0, err
			}
			if ok {
				return fence, nil
			}
			continue // taken between the read and the write: read again
		}
		wait := jitter(pause)
		pause = min(2*pause, retryDelay)
		if untilFree := time.UnixMicro(h.expiresUS).Sub(now); untilFree < wait {
			wait = max(untilFree, 0)
		}
		if err := d.waitChange(ctx, wait, changed); err != nil {
			if ctx.Err() != nil && h.expiresUS > 0 {
				err = drivers.HeldByWhenEnded(err, key, drivers.HeldBy{Holder: drivers.HolderOf(h.owner), TTL: time.Until(time.UnixMicro(h.expiresUS))})
			}
			return 0, err
		}
	}
}

// waitChange returns after wait, at a change, or with an error when ctx
// ends or the handle closes.
func (d *Driver) waitChange(ctx context.Context, wait time.Duration, changed <-chan struct{}) error {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-changed:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("sqlite: acquire wait: %w", ctx.Err())
	case <-d.done:
		return drivers.ErrClosed
	}
}

// abandon releases a grant that may have been written by an Acquire whose
// ctx ended mid-statement. Release is owner-guarded, so when nothing was
// granted this deletes nothing.
func (d *Driver) abandon(ctx context.Context, key, owner string) {
	if ctx.Err() == nil || d.closed.Load() {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.BusyTimeout)
	defer cancel()
	_, _ = d.Release(rctx, key, owner)
}
