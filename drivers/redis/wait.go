package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// wait serves a request that waits: it keeps the request's place in the
// queue of every busy key (and the free keys of a set, taken meanwhile)
// until one attempt finds every key granted, or ctx ends.
//
// Waiting is pushed: a release that lets a waiter of another process in
// names it on the key's channel, and the driver's single subscription
// wakes exactly that waiter, which takes its grant up; a release by this
// process hands the key to its own waiter of one key in the same script.
// A waiter also tries when the holder's grant would end (the head only),
// and at least every PollInterval and a third of waiterLease, which keeps
// its place alive. opts.RetryDelay is not used.
//
// Redis being unreachable ends the wait with an error matching
// ErrUnavailable, after a few quick retries that let a waiter ride out a
// server restart (stale pooled connections fail once each). A wait that
// ends without the grant leaves the queues in the background
// (leaveAbandoned).
func (d *Driver) wait(ctx context.Context, a *attempt) (drivers.Grant, error) {
	r, err := d.try(ctx, a)
	switch {
	case err != nil:
		return drivers.Grant{}, d.abandon(ctx, a, err)
	case r.granted:
		return r.grant(), nil
	}
	a.again()
	w := newWaiter(a)
	if err := d.hub.join(ctx, w); err != nil {
		d.leaveAbandoned(a)
		return drivers.Grant{}, err
	}
	g, err := d.waitFor(ctx, a, w, r)
	d.hub.leave(w, err == nil)
	if err != nil {
		d.leaveAbandoned(a) // and a grant handed over meanwhile
	}
	return g, err
}

// waitFor is the waiting loop of w; r is the attempt before it.
func (d *Driver) waitFor(ctx context.Context, a *attempt, w *waiter, r reply) (drivers.Grant, error) {
	timer := time.NewTimer(d.nextTry(r))
	defer timer.Stop()
	busy, busyAt := r.busy, time.Now()
	var failingSince time.Time // start of the current run of failed attempts
	var pause time.Duration    // before the next attempt while they fail
	var lastErr error          // of the last attempt, nil once Redis answered
	for {
		select {
		case <-ctx.Done():
			err := fmt.Errorf("redis: wait for %q: %w", strings.Join(a.req.Keys, ","), ctx.Err())
			if lastErr != nil {
				// Redis's last word was no answer: an outage, not contention.
				return drivers.Grant{}, fmt.Errorf("%w: %w", err, lastErr)
			}
			held := busy.HeldBy
			held.TTL = max(held.TTL-time.Since(busyAt), 0)
			return drivers.Grant{}, drivers.HeldByWhenEnded(err, busy.Key, held)
		case <-d.done:
			return drivers.Grant{}, drivers.ErrClosed
		case <-w.wake:
		case <-timer.C:
		}
		if fence, ok := d.hub.handedOver(w); ok {
			return drivers.Grant{Acquired: true, Fences: []uint64{fence}}, nil
		}
		r, err := d.try(ctx, a)
		if err != nil {
			if ctx.Err() != nil {
				return drivers.Grant{}, cutOff(err)
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
			return drivers.Grant{}, err
		}
		failingSince, pause, lastErr = time.Time{}, 0, nil
		if r.granted {
			return r.grant(), nil
		}
		busy, busyAt = r.busy, time.Now()
		timer.Reset(d.nextTry(r))
	}
}

// nextTry is how long a waiter sleeps after an attempt that did not get
// every key: a third of waiterLease (so its places stay alive) and at most
// PollInterval, and for the head of the queue no longer than the holder
// in its way has left.
func (d *Driver) nextTry(r reply) time.Duration {
	next := min(waiterLease/3, d.cfg.PollInterval)
	if (r.head || !r.queued) && r.left >= 0 {
		next = min(next, max(r.left, time.Millisecond))
	}
	return next
}

// abandon handles a failed first attempt: when the caller's context ended
// while it was in flight, Redis may have granted the keys or queued the
// request all the same.
func (d *Driver) abandon(ctx context.Context, a *attempt, err error) error {
	if ctx.Err() != nil {
		d.leaveAbandoned(a)
		return cutOff(err)
	}
	if errors.Is(err, drivers.ErrUnavailable) {
		d.leaveAbandoned(a) // it may have reached Redis
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

// leaveAbandoned gives up the places of a wait that ended without its
// grant, and the grants it may have (a set's free keys, a grant made just
// as it gave up), in the background so that the waiter returns by its
// deadline; the driver's later calls on those keys wait for it (leaving).
// The release is owner-guarded, so it cannot touch anyone else's
// grant, and spares the other waiters a lease of waiting for one that does
// not come. Close cancels it and waits for it. A reused owner's grants are
// left to lapse (drivers.WaitOptions.OwnerReused): the release, guarded by
// the owner alone, could free the grant of the owner's next call.
func (d *Driver) leaveAbandoned(a *attempt) {
	grants := flag(!a.req.OwnerReused)
	d.leave(a.req.Keys, func(ctx context.Context, k string) {
		_ = releaseScript.Run(ctx, d.client, keysFor(k).names(), a.req.Owner, grants).Err()
	})
}
