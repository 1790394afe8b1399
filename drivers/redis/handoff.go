package redis

import (
	"context"
	"time"
)

// clusterMaxHandoffs bounds consecutive direct hand-offs of one key on
// Redis Cluster. Elsewhere the subscriber count of the key's channel shows
// every other waiting process, but on a cluster it covers only the
// subscriptions on the key's own node; a plain release now and then gives
// the waiters of other processes a chance anyway.
const clusterMaxHandoffs = 32

// handOffResult is what a hand-off attempt came to.
type handOffResult int

const (
	handOffUnknown  handOffResult = iota // Redis did not answer
	handOffNotHeld                       // the releasing owner no longer held the key
	handOffReleased                      // released for everyone (other processes wait)
	handOffGranted                       // granted to the waiter
)

// beginHandoff picks the head waiter of channel for a direct hand-off, or
// returns nil when there is none (or one is already under way, or the key
// has been handed off h.maxHandoffs times in a row). ownSubs is how many of
// the channel's subscribers are this driver's.
func (h *hub) beginHandoff(channel string) (w *waiter, ownSubs int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[channel]
	if q == nil || len(q.waiters) == 0 || q.waiters[0].handoff {
		return nil, 0
	}
	if h.maxHandoffs > 0 && q.handoffs >= h.maxHandoffs {
		q.handoffs = 0
		return nil, 0
	}
	w = q.waiters[0]
	w.handoff, w.pushed = true, false
	if q.confirmed {
		ownSubs = 1
	}
	return w, ownSubs
}

// endHandoff records the outcome of a hand-off to w. It reports orphan
// when the key was granted to w but w had already given up waiting: the
// caller must then release w's grant (unless w's owner is reused: its next
// call may hold the key by then, and the grant is left to its TTL).
func (h *hub) endHandoff(w *waiter, res handOffResult, fence uint64) (orphan bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w.handoff = false
	q := w.q
	switch res {
	case handOffGranted:
		if w.gone {
			return !w.selfGranted && !w.reused
		}
		q.handoffs++
		w.granted, w.fence = true, fence
		if i := indexOf(q.waiters, w); i >= 0 {
			q.removeAt(i)
			if i == 0 && len(q.waiters) > 0 {
				q.promote(true, w.ttl)
			}
		}
	case handOffReleased:
		// Every waiting process learns of this release from its message;
		// the local head waits for it too, unless it already came.
		q.handoffs = 0
		if !w.pushed {
			w.retryAt = time.Now().Add(h.poll)
		}
	case handOffUnknown:
		w.retryAt = time.Time{} // the key may be free: look at once
	case handOffNotHeld:
	}
	signal(w)
	return false
}

// handOff releases key for owner, giving it directly to waiter w of this
// process when no other process waits for it.
func (d *Driver) handOff(ctx context.Context, key, owner string, ks keyspace, w *waiter, ownSubs int) (bool, error) {
	res, err := d.run(ctx, handOffScript, []string{ks.lock, ks.fence},
		owner, w.owner, millis(w.ttl), ks.channel, ownSubs).Int64()
	switch {
	case err != nil:
		d.hub.endHandoff(w, handOffUnknown, 0)
		return false, d.translate(ctx, "release", key, err)
	case res < 0:
		d.hub.endHandoff(w, handOffNotHeld, 0)
		return false, nil
	case res == 0:
		d.hub.endHandoff(w, handOffReleased, 0)
		return true, nil
	}
	if orphan := d.hub.endHandoff(w, handOffGranted, uint64(res)); orphan {
		// The waiter gave up while its grant was on the way; free the key
		// for the others rather than leave it blocked for a TTL.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		_, _ = d.releaseFor(cctx, key, ks, w.owner)
	}
	return true, nil
}
