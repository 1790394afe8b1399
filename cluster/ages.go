package cluster

import (
	"sync"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
)

// tableAges is when each grant was made and each waiter queued: the time
// (engine time, nanoseconds) of the entry that did it, as this node
// applied it, for the ages a listing shows. It is what the node saw, not
// replicated state: a grant or waiter from before the node restored a
// snapshot or started has no age (0), and a listing shows none for it.
// A restore also forgets every waiter's age (restored).
//
// A waiter is forgotten when a hand-off lets it in or a cancel-wait
// removes it, a grant when a release, an expiry or a force-release ends
// it (a busy table, whose ended keys nobody lists, would otherwise fill
// the record and wipe the age of a grant held all along); for a key a
// listing reads, the grants and waiters it no longer has are forgotten.
// Beyond maxAges entries of either kind (what left in a way not seen, of
// keys nobody lists) all of that kind are forgotten: the ages are a
// courtesy, the table itself is the engine's.
type tableAges struct {
	mu      sync.Mutex
	grants  ageSet[uint64] // key → fence → granted at, by owner
	waiters ageSet[string] // key → owner → queued at, by owner
}

const maxAges = 1 << 16

// applied records the grants and waiters the applied entry a made and
// forgets the waiters it let in or removed. It runs in the FSM goroutine.
func (t *tableAges) applied(a fsm.Applied) {
	granted := a.Result.OK && a.Entry.AcquireKeys() != nil
	ended := a.Result.OK && (a.Entry.Op == engine.OpRelease || a.Entry.Op == engine.OpExpire || a.Entry.Op == engine.OpForceRelease)
	if !granted && !ended && !a.Result.Queued && len(a.Result.Handoffs) == 0 && a.Entry.Op != engine.OpCancelWait {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := a.Entry.Now
	if ended { // before the hand-offs it made
		e := a.Entry
		for fence, g := range t.grants.m[e.Key] {
			if e.Op == engine.OpForceRelease || e.Op == engine.OpRelease && g.by == e.Owner ||
				e.Op == engine.OpExpire && fence == e.ExpectFence {
				t.grants.forget(e.Key, fence)
			}
		}
	}
	for i, key := range a.Entry.AcquireKeys() {
		switch {
		case i >= len(a.Result.Grants):
		case a.Result.Grants[i] == (engine.Grant{}):
			if a.Result.Queued {
				t.waiters.add(key, a.Entry.Owner, a.Entry.Owner, now) // a waiter that asks again keeps its age
			}
		default:
			t.grants.add(key, a.Result.Grants[i].Fence, a.Entry.Owner, now) // a refresh keeps its fence, and its age
		}
	}
	for _, h := range a.Result.Handoffs {
		t.waiters.forget(h.Key, h.Owner)
		t.grants.add(h.Key, h.Fence, h.Owner, now)
	}
	if a.Entry.Op == engine.OpCancelWait {
		t.waiters.forget(a.Entry.Key, a.Entry.Owner)
	}
}

// restored forgets every waiter's age once the table is a snapshot's:
// in the entries the snapshot stands for, which this node did not apply,
// a waiter may have been let in or removed and its owner queued again,
// so the place the table has for it need not be the one recorded. A
// grant's age stays: its fence names that one grant, which a refresh
// keeps. It runs in the FSM goroutine (fsm.Config.OnRestore).
func (t *tableAges) restored() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.waiters = ageSet[string]{}
}

// fill sets the ages at now (engine time) of l's grants and waiters,
// whose owners are still as the engine records them, and forgets the
// key's grants and waiters that l no longer has.
func (t *tableAges) fill(l *api.Lock, now int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	age := func(at int64, ok bool) time.Duration {
		if !ok || at >= now {
			return 0
		}
		return time.Duration(now - at)
	}
	fences := map[uint64]bool{l.Fence: true}
	l.Age = age(t.grants.at(l.Key, l.Fence))
	for i := range l.Holders {
		h := &l.Holders[i]
		fences[h.Fence] = true
		h.Age = age(t.grants.at(l.Key, h.Fence))
	}
	t.grants.keepOnly(l.Key, fences)
	owners := map[string]bool{}
	for i := range l.Queue {
		q := &l.Queue[i]
		owners[q.Owner] = true
		q.AgeMillis = int64(age(t.waiters.at(l.Key, q.Owner)) / time.Millisecond)
	}
	t.waiters.keepOnly(l.Key, owners)
}

// ageSet is a time for each (key, name), and who it is of, bounded by
// maxAges: a grant's name is its fence, a waiter's its owner.
type ageSet[N comparable] struct {
	m map[string]map[N]seenAt
	n int
}

type seenAt struct {
	at int64
	by string // the owner
}

// add records at for (key, name), of owner by, unless it has a time
// already.
func (s *ageSet[N]) add(key string, name N, by string, at int64) {
	if s.n >= maxAges {
		s.m, s.n = nil, 0
	}
	if s.m == nil {
		s.m = map[string]map[N]seenAt{}
	}
	names := s.m[key]
	if names == nil {
		names = map[N]seenAt{}
		s.m[key] = names
	}
	if _, ok := names[name]; !ok {
		names[name] = seenAt{at: at, by: by}
		s.n++
	}
}

func (s *ageSet[N]) at(key string, name N) (int64, bool) {
	a, ok := s.m[key][name]
	return a.at, ok
}

func (s *ageSet[N]) forget(key string, name N) {
	if names := s.m[key]; names != nil {
		if _, ok := names[name]; ok {
			delete(names, name)
			s.n--
		}
		if len(names) == 0 {
			delete(s.m, key)
		}
	}
}

// keepOnly forgets key's names that keep does not hold.
func (s *ageSet[N]) keepOnly(key string, keep map[N]bool) {
	for name := range s.m[key] {
		if !keep[name] {
			s.forget(key, name)
		}
	}
}
