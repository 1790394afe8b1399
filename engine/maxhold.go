package engine

import (
	"math"
	"time"
)

// A cap on total hold time (AcquireRequest.MaxHold, Command.MaxHold) is
// the latest a grant may last, however often it is refreshed: set when
// the grant is made, kept by every refresh, which sets its deadline to
// min(now+ttl, cap). Reaching the cap is reaching the deadline: the grant
// ends as any expiry does, and the key passes on.
//
// A wait for several keys starts its cap when its last key comes, as its
// TTL: until then each key it takes or is handed has its cap pending (no
// cap yet). A live wait starts them itself (groupStarts); in a replicated
// table, which cannot tell when a set completes, the owner's next acquire
// of the key with a cap starts it: the set's closing refresh (see
// CapPending).
//
// The caps live beside the entries, by fence (a fence names one grant in
// the whole table), so a table that uses none pays nothing for them, and
// an entry stays 64 bytes.

// CapPending, as an acquire's MaxHold (Command.MaxHold), makes the cap of
// each grant it makes pending, and keeps a pending cap so: it is the
// keep-alive of the keys a set holds while it waits for the others,
// whose cap starts with the set's closing refresh. A replicated wait for
// several keys that queues for some gives its grants, and its hand-offs,
// a pending cap itself.
const CapPending = forever

// capPending is a pending cap in table.caps: no deadline is past it.
const capPending = math.MaxInt64

// startCap gives the grant h its cap, maxHold from now (0: none;
// CapPending: pending), and clamps its deadline to it.
func (t *table) startCap(h *holder, maxHold time.Duration) {
	if maxHold <= 0 {
		return
	}
	if t.caps == nil {
		t.caps = make(map[uint64]int64)
	}
	c := t.deadlineAfter(maxHold) // capPending for CapPending
	t.caps[h.fence] = c
	h.deadline = min(h.deadline, c)
}

// startPending starts the pending cap of the grant h, maxHold from now:
// a refresh keeps the first grant's cap unless that is pending, and a
// refresh without a cap, or with CapPending, leaves it pending.
func (t *table) startPending(h *holder, maxHold time.Duration) {
	if maxHold > 0 && maxHold != CapPending && t.caps[h.fence] == capPending {
		t.startCap(h, maxHold)
	}
}

// capped is deadline, or the cap of the grant fence if that comes first.
func (t *table) capped(fence uint64, deadline int64) int64 {
	if c, ok := t.caps[fence]; ok {
		return min(deadline, c)
	}
	return deadline
}

// forgetCap drops the cap of the grant fence, which has ended.
func (t *table) forgetCap(fence uint64) {
	if len(t.caps) > 0 {
		delete(t.caps, fence)
	}
}

// forgetCaps drops the caps of e's grants for which end says so.
func (t *table) forgetCaps(e *entry, end func(*holder) bool) {
	if len(t.caps) == 0 {
		return
	}
	for i := range e.holders() {
		if h := e.holder(i); end(h) {
			delete(t.caps, h.fence)
		}
	}
}
