package redis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zerotal/lock/drivers"
)

// cleanupTimeout bounds the release sent on behalf of a waiter that gave
// up while a grant to it may have been under way.
const cleanupTimeout = time.Second

// waitOutage is how long a waiter rides out an unavailable backend, trying
// again with growing pauses, before it reports it (see wait): long enough
// for a restart of Redis or the discarding of the pool's dead connections,
// short enough that an outage is reported while it lasts.
const waitOutage = 2 * time.Second

// acquireKeyWait blocks until key is granted to owner, ctx ends or the driver
// is closed.
//
// Waiting is pushed: a release or force release publishes on the key's
// channel and the driver's single subscription wakes the first local
// waiter, which tries the key. A failed attempt tells how long the holder
// has left, so the waiter also tries when the lock would expire on its own,
// and at least every PollInterval in case a message was lost. Waiters in
// one process are served in arrival order, and a release by the same
// process hands the key straight to the next of them when no other process
// waits for it; across processes, whoever reacts first to a release wins.
// opts.RetryDelay is not used.
//
// Redis being unreachable ends the wait with an error matching
// ErrUnavailable, after a few quick retries that let a waiter ride out a
// server restart (stale pooled connections fail once each).
func (d *Driver) acquireKeyWait(ctx context.Context, key, owner string, ttl time.Duration, opts drivers.WaitOptions) (uint64, error) {
	if err := d.usable(ctx, "wait for", key); err != nil {
		return 0, err // nothing sent, nothing to clean up
	}
	channel := keysFor(key).channel
	first := drivers.HeldBy{TTL: -1} // unknown: try again after PollInterval
	// Try at once, unless this process already has waiters for the key:
	// then take a place behind them rather than overtake them (a holder
	// that releases and asks again would otherwise win every time).
	if !d.hub.waiting(channel) {
		fence, ok, held, err := d.acquire(ctx, key, owner, ttl)
		if err != nil {
			return 0, d.abandon(ctx, key, owner, opts.OwnerReused, err)
		}
		if ok {
			return fence, nil
		}
		first = held
	}

	w, err := d.hub.join(ctx, channel, owner, ttl, opts.OwnerReused)
	if err != nil {
		return 0, err
	}
	fence, err := d.wait(ctx, key, w, first)
	if err != nil {
		// A hand-off may have given w the key just as it gave up.
		if d.hub.leave(w, false) {
			d.releaseAbandoned(key, owner, w.reused)
		}
		return 0, err
	}
	return fence, nil
}

// wait is the waiting loop of w; it returns once w holds the key. On
// success w has left its queue. first is what the attempt before it
// learnt of the holder (TTL -1: unknown).
func (d *Driver) wait(ctx context.Context, key string, w *waiter, first drivers.HeldBy) (uint64, error) {
	holderTTL, heldBy := first.TTL, first.Holder
	timer := time.NewTimer(d.nextTry(holderTTL))
	defer timer.Stop()
	var failingSince time.Time // start of the current run of failed attempts
	var pause time.Duration    // before the next attempt while they fail
	var lastErr error          // of the last attempt, nil once Redis answered
	var heldUntil time.Time    // the holder's deadline, as last told
	if holderTTL >= 0 {
		heldUntil = time.Now().Add(holderTTL)
	}
	for {
		select {
		case <-ctx.Done():
			err := fmt.Errorf("redis: wait for %q: %w", key, ctx.Err())
			if lastErr != nil {
				// Redis's last word was no answer: an outage, not contention.
				return 0, fmt.Errorf("%w: %w", err, lastErr)
			}
			if heldUntil.IsZero() {
				return 0, err
			}
			return 0, drivers.HeldByWhenEnded(err, key, drivers.HeldBy{Holder: heldBy, TTL: time.Until(heldUntil)})
		case <-d.done:
			return 0, drivers.ErrClosed
		case <-w.wake:
			st := d.hub.turn(w)
			if st.granted {
				return st.fence, nil
			}
			if !st.head || st.busy {
				continue
			}
			if wait := time.Until(st.retryAt); wait > 0 {
				timer.Reset(min(wait, d.cfg.PollInterval))
				continue
			}
		case <-timer.C:
			st := d.hub.turn(w)
			if st.granted {
				return st.fence, nil
			}
			if !st.head || st.busy {
				timer.Reset(d.cfg.PollInterval)
				continue
			}
		}

		fence, ok, held, err := d.acquire(ctx, key, w.owner, w.ttl)
		left := held.TTL
		if !ok && err == nil {
			heldBy = held.Holder
		}
		if err != nil {
			if ctx.Err() != nil {
				d.releaseAbandoned(key, w.owner, w.reused)
				return 0, cutOff(err)
			}
			lastErr = err
			// A waiter can wake during an outage (the subscription drops
			// when Redis goes away), and right after Redis restarts the
			// pool still holds connections to the old process, whose first
			// commands fail once and are discarded. A waiter rides that out
			// for waitOutage before it reports the backend unavailable.
			if errors.Is(err, drivers.ErrUnavailable) {
				if failingSince.IsZero() {
					failingSince = time.Now()
				}
				if time.Since(failingSince) < waitOutage {
					pause = min(max(2*pause, 10*time.Millisecond), 200*time.Millisecond)
					timer.Reset(pause)
					continue
				}
			}
			return 0, err
		}
		failingSince, pause, lastErr = time.Time{}, 0, nil
		if ok {
			d.hub.leave(w, true)
			return fence, nil
		}
		if left >= 0 {
			heldUntil = time.Now().Add(left)
		}
		timer.Reset(d.nextTry(left))
	}
}

// abandon handles a failed first attempt: when the caller's context ended
// while it was in flight, Redis may have granted the key all the same.
func (d *Driver) abandon(ctx context.Context, key, owner string, reused bool, err error) error {
	if ctx.Err() != nil {
		d.releaseAbandoned(key, owner, reused)
		return cutOff(err)
	}
	return err
}

// cutOff is the error of an attempt whose deadline passed before Redis
// answered: it may have been applied, so it also matches
// drivers.ErrOutcomeUnknown (and ErrUnavailable), never contention.
func cutOff(err error) error {
	if errors.Is(err, drivers.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		return err // a failure already, or the caller cancelled: no claim
	}
	return drivers.OutcomeUnknown("no answer before the context ended", err)
}

// releaseAbandoned releases a grant that the waiter gave up on, in the
// background so that the waiter returns by its deadline. The release is
// owner-guarded, so it cannot touch anyone else's lock, and spares the
// other waiters a TTL of waiting for a holder that does not exist. Close
// cancels it and waits for it. A reused owner's grant is left to its TTL
// (drivers.WaitOptions.OwnerReused): the release, guarded by the owner
// alone, could free the grant of the owner's next call.
func (d *Driver) releaseAbandoned(key, owner string, reused bool) {
	if reused {
		return
	}
	d.cleanups.Go(cleanupTimeout, func(ctx context.Context) {
		_, _ = d.releaseFor(ctx, key, keysFor(key), owner)
	})
}

// nextTry is how long a head waiter sleeps after a failed attempt: until
// the holder's lock would expire, but never longer than PollInterval.
func (d *Driver) nextTry(holderTTL time.Duration) time.Duration {
	if holderTTL < 0 || holderTTL > d.cfg.PollInterval {
		return d.cfg.PollInterval
	}
	return max(holderTTL, time.Millisecond)
}
