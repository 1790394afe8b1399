package engine

import "time"

// A cap on total hold time (AcquireRequest.MaxHold, Command.MaxHold) is
// the latest a grant may last, however often it is refreshed: set when
// the grant is made (for a live wait for several keys, when its last key
// comes and its TTL starts), kept by every refresh, which sets its
// deadline to min(now+ttl, cap). Reaching the cap is reaching the
// deadline: the grant ends as any expiry does, and the key passes on.
//
// The caps live beside the entries, by fence (a fence names one grant in
// the whole table), so a table that uses none pays nothing for them, and
// an entry stays 64 bytes.

// startCap gives the grant h its cap, maxHold from now (0: none), and
// clamps its deadline to it.
func (t *table) startCap(h *holder, maxHold time.Duration) {
	if maxHold <= 0 {
		return
	}
	if t.caps == nil {
		t.caps = make(map[uint64]int64)
	}
	c := t.deadlineAfter(maxHold)
	t.caps[h.fence] = c
	h.deadline = min(h.deadline, c)
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
