package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/zerotal/lock/drivers"
)

// cleanupTimeout bounds the release sent on behalf of a waiter whose
// context ended while its attempt was in flight.
const cleanupTimeout = time.Second

// AcquireWait blocks until key is granted to owner, ctx ends or the driver
// is closed.
//
// Waiting is pushed: a release or force release publishes on the key's
// channel and the driver's single subscription wakes the first local
// waiter, which tries the key. A failed attempt tells how long the holder
// has left, so the waiter also tries when the lock would expire on its own,
// and at least every PollInterval in case a message was lost. Waiters in
// one process are served in arrival order; across processes, whoever
// reacts first to a release wins. opts.RetryDelay is not used.
//
// Redis being unreachable ends the wait with an error matching
// ErrUnavailable.
func (d *Driver) AcquireWait(ctx context.Context, key, owner string, ttl time.Duration, _ drivers.WaitOptions) (uint64, error) {
	channel := keysFor(key).channel
	var (
		fence     uint64
		ok        bool
		holderTTL = d.cfg.PollInterval
		err       error
	)
	// Try at once, unless this process already has waiters for the key:
	// then take a place behind them rather than overtake them (a holder
	// that releases and asks again would otherwise win every time).
	if !d.hub.waiting(channel) {
		fence, ok, holderTTL, err = d.acquire(ctx, key, owner, ttl)
		if err != nil {
			return 0, d.abandon(ctx, key, owner, err)
		}
		if ok {
			return fence, nil
		}
	}

	w, err := d.hub.join(ctx, channel)
	if err != nil {
		return 0, err
	}
	granted := false
	defer func() { d.hub.leave(w, granted, ttl) }()

	timer := time.NewTimer(d.nextTry(holderTTL))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("redis: wait for %q: %w", key, ctx.Err())
		case <-d.done:
			return 0, drivers.ErrClosed
		case <-w.wake:
			head, retryAt := d.hub.turn(w)
			if !head {
				continue
			}
			if wait := time.Until(retryAt); wait > 0 {
				timer.Reset(min(wait, d.cfg.PollInterval))
				continue
			}
		case <-timer.C:
			if head, _ := d.hub.turn(w); !head {
				timer.Reset(d.cfg.PollInterval)
				continue
			}
		}

		fence, ok, holderTTL, err = d.acquire(ctx, key, owner, ttl)
		if err != nil {
			return 0, d.abandon(ctx, key, owner, err)
		}
		if ok {
			granted = true
			return fence, nil
		}
		timer.Reset(d.nextTry(holderTTL))
	}
}

// abandon handles a failed attempt. When the caller's context ended while
// the attempt was in flight, Redis may have granted the key all the same;
// the grant is released (the release is owner-guarded, so it cannot touch
// anyone else's lock) so that the key does not stay blocked for a TTL.
func (d *Driver) abandon(ctx context.Context, key, owner string, err error) error {
	if ctx.Err() != nil && !d.closed.Load() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		_, _ = d.Release(cctx, key, owner)
		cancel()
	}
	return err
}

// nextTry is how long a head waiter sleeps after a failed attempt: until
// the holder's lock would expire, but never longer than PollInterval.
func (d *Driver) nextTry(holderTTL time.Duration) time.Duration {
	if holderTTL < 0 || holderTTL > d.cfg.PollInterval {
		return d.cfg.PollInterval
	}
	return max(holderTTL, time.Millisecond)
}
