package engine

import (
	"errors"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/zerotal/lock/drivers"
)

// model is the reference the property tests compare the engine with: the
// rules written out plainly over a map, with no heap, no pooling and no
// goroutine.
type model struct {
	locks      map[string]*modelLock
	counter    uint64
	now        int64
	maxKeys    int
	maxWaiters int
	// others, when set, is what else MaxKeys counts: the holders and
	// waiters of the shared names beside these mutexes.
	others func() int
}

// counted is what MaxKeys counts: a key per mutex, and the others.
func (m *model) counted() int {
	if m.others == nil {
		return len(m.locks)
	}
	return len(m.locks) + m.others()
}

type modelLock struct {
	owner    string
	fence    uint64
	deadline int64
	waiters  []modelWaiter
}

type modelWaiter struct {
	owner string
	ttl   time.Duration
}

// modelResult mirrors Result, with the class of error expected.
type modelResult struct {
	Result
	errFull    bool
	errInvalid bool
}

func newModel(maxKeys, maxWaiters int) *model {
	return &model{locks: map[string]*modelLock{}, maxKeys: maxKeys, maxWaiters: maxWaiters}
}

func (m *model) fence(want uint64) uint64 {
	if want > m.counter {
		m.counter = want
	} else {
		m.counter++
	}
	return m.counter
}

func (m *model) until(ttl time.Duration) int64 {
	if int64(ttl) > 1<<63-1-m.now {
		return 1<<63 - 1
	}
	return m.now + int64(ttl)
}

func (m *model) grant(key string) Grant {
	l := m.locks[key]
	return Grant{Key: key, Owner: l.owner, Fence: l.fence, Deadline: l.deadline}
}

func (m *model) dropWaiter(l *modelLock, owner string) bool {
	for i, w := range l.waiters {
		if w.owner == owner {
			l.waiters = append(l.waiters[:i:i], l.waiters[i+1:]...)
			return true
		}
	}
	return false
}

// end finishes key's grant: first waiter takes it, or the key goes.
func (m *model) end(key string, want uint64) *Grant {
	l := m.locks[key]
	if len(l.waiters) == 0 {
		delete(m.locks, key)
		return nil
	}
	w := l.waiters[0]
	l.waiters = l.waiters[1:]
	l.owner, l.fence, l.deadline = w.owner, m.fence(want), m.until(w.ttl)
	g := m.grant(key)
	return &g
}

// contend is an acquire of a held, unexpired key.
func (m *model) contend(c Command, l *modelLock) modelResult {
	var r modelResult
	if l.owner == c.Owner {
		l.deadline = m.until(c.TTL)
		r.OK, r.Grant = true, m.grant(c.Key)
		return r
	}
	r.Grant = m.grant(c.Key)
	if !c.Wait {
		return r
	}
	for _, w := range l.waiters {
		if w.owner == c.Owner {
			r.Queued = true
			return r
		}
	}
	if m.maxWaiters > 0 && len(l.waiters) >= m.maxWaiters {
		r.errFull = true
		return r
	}
	l.waiters = append(l.waiters, modelWaiter{owner: c.Owner, ttl: c.TTL})
	r.Queued = true
	return r
}

func (m *model) apply(c Command) modelResult {
	if c.Now > m.now {
		m.now = c.Now
	}
	var r modelResult
	l := m.locks[c.Key]
	switch c.Op {
	case OpAcquire:
		if c.Key == "" || c.Owner == "" || c.TTL <= 0 {
			r.errInvalid = true
			return r
		}
		switch {
		case l == nil:
			if m.maxKeys > 0 && m.counted() >= m.maxKeys {
				r.errFull = true
				return r
			}
			m.locks[c.Key] = &modelLock{owner: c.Owner, fence: m.fence(c.Fence), deadline: m.until(c.TTL)}
			r.OK, r.Grant = true, m.grant(c.Key)
		case l.deadline <= m.now && len(l.waiters) == 0:
			l.owner, l.fence, l.deadline = c.Owner, m.fence(c.Fence), m.until(c.TTL)
			r.OK, r.Grant = true, m.grant(c.Key)
		case l.deadline <= m.now:
			// The head of the queue gets the expired key first; the
			// acquire then contends with it.
			m.end(c.Key, c.Fence)
			r = m.contend(c, l)
			r.Handoffs = []Grant{m.grant(c.Key)}
		default:
			r = m.contend(c, l)
		}
	case OpRelease:
		if l != nil && l.owner == c.Owner && l.deadline > m.now {
			r.OK = true
			r.Handoffs = optional(m.end(c.Key, c.Fence))
		}
	case OpExtend:
		if l == nil {
			return r
		}
		if l.owner == c.Owner && l.deadline > m.now {
			l.deadline = m.until(c.TTL)
			r.OK = true
		}
		r.Grant = m.grant(c.Key)
	case OpForceRelease:
		if l != nil {
			r.OK = true
			r.Handoffs = optional(m.end(c.Key, c.Fence))
		}
	case OpExpire:
		if l != nil && l.owner == c.Owner && l.fence == c.ExpectFence && l.deadline <= m.now {
			r.OK = true
			r.Handoffs = optional(m.end(c.Key, c.Fence))
		}
	case OpCancelWait:
		if l != nil {
			r.OK = m.dropWaiter(l, c.Owner)
		}
	case OpAcquireAll:
		return m.acquireAll(c)
	case OpTick:
		r.OK = true
	default:
		r.errInvalid = true
	}
	return r
}

// acquireAll is every key of c or none: the first key held by another
// owner (or expired with waiters) refuses the lot, naming its holder.
func (m *model) acquireAll(c Command) modelResult {
	var r modelResult
	seen := map[string]bool{}
	for _, k := range c.Keys {
		if k == "" || seen[k] {
			r.errInvalid = true
		}
		seen[k] = true
	}
	if len(c.Keys) == 0 || c.Owner == "" || c.TTL <= 0 || r.errInvalid {
		r.errInvalid = true
		return r
	}
	// A key whose grant has run out with waiters queued goes to the first
	// of them, as its expiry would give it, before anything else: then it
	// is held like any other.
	for _, k := range c.Keys {
		if l := m.locks[k]; l != nil && l.deadline <= m.now && len(l.waiters) > 0 {
			r.Handoffs = append(r.Handoffs, *m.end(k, c.Fence))
		}
	}
	fresh := 0
	queue := map[string]bool{}
	for _, k := range c.Keys {
		l := m.locks[k]
		switch {
		case l == nil:
			fresh++
		case l.deadline <= m.now && len(l.waiters) == 0:
		case l.owner == c.Owner && l.deadline > m.now:
		case !c.Wait:
			r.Grant = m.grant(k)
			return r
		case slices.ContainsFunc(l.waiters, func(w modelWaiter) bool { return w.owner == c.Owner }):
			return modelResult{errInvalid: true, Result: Result{Handoffs: r.Handoffs}}
		case m.maxWaiters > 0 && len(l.waiters) >= m.maxWaiters:
			return modelResult{errFull: true, Result: Result{Handoffs: r.Handoffs}}
		default:
			// With Wait, a busy key queues the owner; the others are
			// taken now, in the same step.
			if len(queue) == 0 {
				r.Grant = m.grant(k)
			}
			queue[k] = true
		}
	}
	if m.maxKeys > 0 && m.counted()+fresh > m.maxKeys {
		return modelResult{errFull: true, Result: Result{Handoffs: r.Handoffs}}
	}
	if len(queue) == 0 {
		r.Grant = Grant{}
	}
	want := c.Fence
	for _, k := range c.Keys {
		l := m.locks[k]
		if queue[k] {
			l.waiters = append(l.waiters, modelWaiter{owner: c.Owner, ttl: c.TTL})
			r.Grants = append(r.Grants, Grant{})
			continue
		}
		switch {
		case l == nil:
			m.locks[k] = &modelLock{owner: c.Owner, fence: m.fence(want), deadline: m.until(c.TTL)}
		case l.owner == c.Owner && l.deadline > m.now:
			l.deadline = m.until(c.TTL)
		default:
			l.owner, l.fence, l.deadline = c.Owner, m.fence(want), m.until(c.TTL)
		}
		r.Grants = append(r.Grants, m.grant(k))
	}
	r.OK, r.Queued = len(queue) == 0, len(queue) > 0
	return r
}

// expireDue is what a live engine does before each batch: end every due
// grant, earliest deadline first, ties by key.
func (m *model) expireDue() []Grant {
	var due []Grant
	for k, l := range m.locks {
		if l.deadline <= m.now {
			due = append(due, Grant{Key: k, Deadline: l.deadline})
		}
	}
	sort.Slice(due, func(i, j int) bool {
		if due[i].Deadline != due[j].Deadline {
			return due[i].Deadline < due[j].Deadline
		}
		return due[i].Key < due[j].Key
	})
	var handoffs []Grant
	for _, d := range due {
		if h := m.end(d.Key, 0); h != nil {
			handoffs = append(handoffs, *h)
		}
	}
	return handoffs
}

func (m *model) due(now int64, limit int) []Grant {
	var out []Grant
	for k := range m.locks {
		if g := m.grant(k); g.Deadline <= now {
			out = append(out, g)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Deadline != out[j].Deadline {
			return out[i].Deadline < out[j].Deadline
		}
		return out[i].Key < out[j].Key
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

func (m *model) info(key string) (Info, bool) {
	l := m.locks[key]
	if l == nil {
		return Info{}, false
	}
	return Info{Grant: m.grant(key), Waiters: len(l.waiters)}, true
}

// matches reports how got differs from the model's answer ("" when equal).
func (r modelResult) matches(got Result) string {
	var diffs []string
	switch {
	case r.errFull && !errors.Is(got.Err, drivers.ErrFull):
		diffs = append(diffs, "want ErrFull")
	case r.errInvalid && !errors.Is(got.Err, drivers.ErrInvalid):
		diffs = append(diffs, "want ErrInvalid")
	case !r.errFull && !r.errInvalid && got.Err != nil:
		diffs = append(diffs, "unexpected error")
	}
	if !sameResult(r.Result, got) {
		diffs = append(diffs, "got "+fmtResult(got)+" want "+fmtResult(r.Result))
	}
	return strings.Join(diffs, "; ")
}

// optional is the hand-off g as a Result has it: none when nil.
func optional(g *Grant) []Grant {
	if g == nil {
		return nil
	}
	return []Grant{*g}
}
