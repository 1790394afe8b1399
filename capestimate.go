package lock

import (
	"context"
	"time"

	"github.com/zerotal/lock/drivers"
)

// The cap on total hold time (WithMaxHold) counts, at the backend, from
// the moment the grant is made; the handle counts it from when it sent the
// acquire, which is never later. After a wait that estimate is early by
// as long as the wait took, which may be longer than the cap itself: a
// waiter would be told at once that its fresh grant reached its cap. So
// after a long wait the handle asks the backend how long its grant has
// left (drivers.Inspector), right after a refresh, and raises the estimate
// to what that answer proves, never past the real cap. Meanwhile the
// estimate still bounds ExpiresAt, but the lost-lock watch is not told of
// a cap (holdCap): it goes on refreshing, each refresh raising the
// estimate, until an answer shows the cap itself.

// anchorAfter is how long a waiting acquire may take before its estimates
// are anchored again with a refresh: an eighth of the TTL, or of the cap
// when that is shorter.
func (l *Lock) anchorAfter() time.Duration {
	if l.maxHold > 0 && l.maxHold < l.ttl {
		return l.maxHold / 8
	}
	return l.ttl / 8
}

// loosenCap marks the cap's estimate of owner's grant as possibly far too
// early: the grant came after a wait.
func (l *Lock) loosenCap(owner string) {
	l.mu.Lock()
	if l.owner == owner && l.held && l.maxHold > 0 {
		l.capLoose = true
	}
	l.mu.Unlock()
}

// tightenCap raises a loose estimate of owner's cap after a refresh sent at
// extended, from the backend's answer of how long the grant has left:
// asked at a, the backend's deadline is at least a + remaining, and the
// cap is never earlier than the deadline. When the deadline is earlier
// than the refresh's TTL allows, it is the cap itself: the estimate is
// then as good as it gets, and the handle asks no more. With a backend
// that cannot say, the early estimate stands as the cap.
func (l *Lock) tightenCap(ctx context.Context, owner string, extended time.Time) {
	l.mu.Lock()
	loose, fence := l.capLoose && l.owner == owner && l.held, l.fence
	l.mu.Unlock()
	if !loose {
		return
	}
	in, ok := l.m.driver.(drivers.Inspector)
	if !ok {
		l.mu.Lock()
		l.capLoose = false
		l.mu.Unlock()
		return
	}
	asked := time.Now()
	h, found, err := in.Inspect(ctx, l.fullKey())
	answered := time.Now()
	if err != nil || !found {
		return
	}
	for _, g := range h.Holders {
		if g.Fence != fence || fence == 0 {
			continue
		}
		// Remaining may be rounded down, never up, to whole milliseconds.
		atLeast := asked.Add(g.Remaining)
		atCap := answered.Add(g.Remaining + time.Millisecond).Before(extended.Add(l.ttl))
		l.mu.Lock()
		if l.owner == owner && l.held {
			if atLeast.After(l.capAt) {
				l.capAt = atLeast
			}
			l.capLoose = !atCap
			l.expiresAt = l.deadlineFrom(extended)
		}
		l.mu.Unlock()
		return
	}
}
