package cluster

import (
	"sync"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
)

// waitAges is when each waiter of a key was queued: the time (engine
// time, nanoseconds) of the entry that queued it, as this node applied
// it, for the ages a listing shows. It is what the node saw, not
// replicated state: a waiter queued before the node restored a snapshot
// or started has no age (0), and a listing shows none for it.
//
// An entry is forgotten when a hand-off lets its waiter in or a
// cancel-wait removes it, and, for a key a listing reads, when the
// waiter is no longer in the key's queue. Beyond maxWaitAges entries
// (waiters that left in a way not seen, of keys nobody lists) all are
// forgotten: the ages are a courtesy, the queue itself is the engine's.
type waitAges struct {
	mu    sync.Mutex
	since map[string]map[string]int64 // key → owner → queued at
	n     int
}

const maxWaitAges = 1 << 16

// applied records the waiters the applied entry a queued and forgets
// those it let in or removed. It runs in the FSM goroutine.
func (w *waitAges) applied(a fsm.Applied) {
	queued := a.Result.Queued
	if !queued && len(a.Result.Handoffs) == 0 && a.Entry.Op != engine.OpCancelWait {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if queued {
		for i, key := range a.Entry.AcquireKeys() {
			if i < len(a.Result.Grants) && a.Result.Grants[i] == (engine.Grant{}) {
				w.add(key, a.Entry.Owner, a.Entry.Now)
			}
		}
	}
	for _, h := range a.Result.Handoffs {
		w.forget(h.Key, h.Owner)
	}
	if a.Entry.Op == engine.OpCancelWait {
		w.forget(a.Entry.Key, a.Entry.Owner)
	}
}

func (w *waitAges) add(key, owner string, now int64) {
	if w.n >= maxWaitAges {
		w.since, w.n = nil, 0
	}
	if w.since == nil {
		w.since = map[string]map[string]int64{}
	}
	m := w.since[key]
	if m == nil {
		m = map[string]int64{}
		w.since[key] = m
	}
	if _, ok := m[owner]; !ok { // a waiter that asks again keeps its place, and its age
		m[owner] = now
		w.n++
	}
}

func (w *waitAges) forget(key, owner string) {
	if m := w.since[key]; m != nil {
		if _, ok := m[owner]; ok {
			delete(m, owner)
			w.n--
		}
		if len(m) == 0 {
			delete(w.since, key)
		}
	}
}

// fill sets the age of each waiter in l's queue at now (engine time),
// whose owners are still as the engine records them, and forgets the
// key's waiters that are no longer queued.
func (w *waitAges) fill(l *api.Lock, now int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.since[l.Key]
	if m == nil {
		return
	}
	inQueue := make(map[string]bool, len(l.Queue))
	for i := range l.Queue {
		q := &l.Queue[i]
		inQueue[q.Owner] = true
		if at, ok := m[q.Owner]; ok && now > at {
			q.AgeMillis = int64(time.Duration(now-at) / time.Millisecond)
		}
	}
	if len(inQueue) < len(m) {
		for owner := range m {
			if !inQueue[owner] {
				w.forget(l.Key, owner)
			}
		}
	}
}
