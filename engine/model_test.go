package engine

import (
	"cmp"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/zerotal/lock/drivers"
)

// model is the reference the property tests compare the engine with: the
// rules written out plainly, kind by kind, over a map of names, with no
// heap, no pooling and no goroutine. A mutex, a semaphore and a read/write
// lock are each a name with holders in grant order and a FIFO queue.
type model struct {
	names   map[string]*modelName
	counter uint64
	now     int64
	// maxKeys counts every holder and every waiter of a name that is not
	// a mutex; maxWaiters caps a queue; maxHolders caps a name's readers.
	maxKeys, maxWaiters, maxHolders int
}

type modelName struct {
	claim   Claim // Kind and Limit
	holders []modelHolder
	queue   []modelWaiter
}

type modelHolder struct {
	Grant
	write   bool
	cap     int64 // the end of its cap on total hold time; 0: none
	pending bool  // its cap starts with the owner's next acquire of it with one
}

// until is deadline, or h's cap if that comes first.
func (h *modelHolder) until(deadline int64) int64 {
	if h.cap != 0 {
		return min(deadline, h.cap)
	}
	return deadline
}

type modelWaiter struct {
	owner   string
	ttl     time.Duration
	write   bool
	maxHold time.Duration // its cap, from its grant (CapPending: pending)
}

// modelResult mirrors Result, with the class of error expected.
type modelResult struct {
	Result
	errFull    bool
	errInvalid bool
}

func newModel(maxKeys, maxWaiters, maxHolders int) *model {
	return &model{names: map[string]*modelName{}, maxKeys: maxKeys, maxWaiters: maxWaiters, maxHolders: maxHolders}
}

func (m *model) counted() int {
	c := 0
	for _, n := range m.names {
		c += len(n.holders)
		if n.claim.Kind != Mutex {
			c += len(n.queue)
		}
	}
	return c
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

// fits is the admission rule of each kind, written out.
func (m *model) fits(n *modelName, write bool) bool {
	switch {
	case len(n.holders) == 0:
		return true
	case n.claim.Kind == Semaphore:
		return uint32(len(n.holders)) < n.claim.Limit
	case n.claim.Kind == RWLock && !write:
		return !n.holders[0].write && len(n.holders) < m.maxHolders
	}
	return false // a mutex or a write beside anyone
}

// blocker is the holder a refusal names (drivers.Claim.InTheWay): the
// earliest deadline, lowest fence among equals; with last (a write) the
// latest deadline, highest fence among equals.
func (n *modelName) blocker(last bool) Grant {
	b := n.holders[0].Grant
	for _, h := range n.holders[1:] {
		if !last && (h.Deadline < b.Deadline || h.Deadline == b.Deadline && h.Fence < b.Fence) ||
			last && (h.Deadline > b.Deadline || h.Deadline == b.Deadline && h.Fence > b.Fence) {
			b = h.Grant
		}
	}
	return b
}

func (m *model) grant(key string, n *modelName, owner string, ttl time.Duration, write bool, want uint64, maxHold time.Duration) Grant {
	h := modelHolder{Grant: Grant{Key: key, Owner: owner, Fence: m.fence(want), Deadline: m.until(ttl)}, write: write}
	switch {
	case maxHold == CapPending:
		h.pending = true
	case maxHold > 0:
		h.cap = m.until(maxHold)
		h.Deadline = h.until(h.Deadline)
	}
	n.holders = append(n.holders, h)
	return h.Grant
}

// admit lets waiters in from the head while they fit.
func (m *model) admit(key string, n *modelName, want uint64, r *modelResult) {
	for len(n.queue) > 0 && m.fits(n, n.queue[0].write) {
		q := n.queue[0]
		n.queue = n.queue[1:]
		r.Handoffs = append(r.Handoffs, m.grant(key, n, q.owner, q.ttl, q.write, want, q.maxHold))
	}
}

// drop ends the holders del picks, lets waiters in, and forgets a name
// nobody holds.
func (m *model) drop(key string, n *modelName, want uint64, r *modelResult, del func(modelHolder) bool) {
	n.holders = slices.DeleteFunc(n.holders, del)
	m.admit(key, n, want, r)
	if len(n.holders) == 0 {
		delete(m.names, key)
	}
}

func holderOf(n *modelName, owner string) int {
	return slices.IndexFunc(n.holders, func(h modelHolder) bool { return h.Owner == owner })
}

func waiterOf(n *modelName, owner string) int {
	return slices.IndexFunc(n.queue, func(w modelWaiter) bool { return w.owner == owner })
}

func (m *model) apply(c Command) modelResult {
	if c.Now > m.now {
		m.now = c.Now
	}
	var r modelResult
	n := m.names[c.Key]
	switch c.Op {
	case OpAcquire: // v0.1.0's entry: the one acquire of one key's mutex
		c.Claim = Claim{}
		return m.acquire([]string{c.Key}, c)
	case OpAcquireKeys:
		return m.acquire(c.Keys, c)
	case OpTick:
		r.OK = true
		return r
	case OpRelease, OpExtend, OpForceRelease, OpExpire, OpCancelWait:
		if n == nil {
			return r
		}
	default:
		r.errInvalid = true
		return r
	}
	switch c.Op {
	case OpRelease:
		if i := holderOf(n, c.Owner); i >= 0 && n.holders[i].Deadline > m.now {
			r.OK = true
			m.drop(c.Key, n, c.Fence, &r, func(h modelHolder) bool { return h.Owner == c.Owner })
		}
	case OpExtend:
		i := holderOf(n, c.Owner)
		if i < 0 || n.holders[i].Deadline <= m.now {
			r.Grant = n.blocker(false)
			break
		}
		n.holders[i].Deadline = n.holders[i].until(m.until(c.TTL))
		r.OK, r.Grant = true, n.holders[i].Grant
	case OpForceRelease:
		r.OK = true
		m.drop(c.Key, n, c.Fence, &r, func(modelHolder) bool { return true })
	case OpExpire:
		if i := holderOf(n, c.Owner); i >= 0 && n.holders[i].Fence == c.ExpectFence && n.holders[i].Deadline <= m.now {
			r.OK = true
			m.drop(c.Key, n, c.Fence, &r, func(h modelHolder) bool { return h.Owner == c.Owner })
		}
	case OpCancelWait:
		if i := waiterOf(n, c.Owner); i >= 0 {
			n.queue = slices.Delete(n.queue, i, i+1)
			r.OK = true
			m.drop(c.Key, n, c.Fence, &r, func(modelHolder) bool { return false })
		}
	}
	return r
}

// acquire is every key or none, as c.Claim says: what ran out goes to
// its waiters first; a busy key refuses the lot, or with Wait queues the
// owner while the others are taken in the same step.
func (m *model) acquire(keys []string, c Command) modelResult {
	var r modelResult
	seen := map[string]bool{}
	for _, k := range keys {
		if k == "" || seen[k] {
			r.errInvalid = true
		}
		seen[k] = true
	}
	if len(keys) == 0 || len(keys) > drivers.MaxMultiKeys || c.Owner == "" || c.TTL <= 0 || c.MaxHold < 0 || r.errInvalid ||
		checkClaim(c.Claim) != nil || (c.Claim.Kind == Semaphore && c.Claim.Limit > uint32(m.maxHolders)) {
		return modelResult{errInvalid: true}
	}
	name := Claim{Kind: c.Claim.Kind, Limit: c.Claim.Limit}
	for _, k := range keys {
		if n := m.names[k]; n != nil && n.claim != name {
			return modelResult{errInvalid: true}
		}
	}
	for _, k := range keys {
		if n := m.names[k]; n != nil {
			m.drop(k, n, c.Fence, &r, func(h modelHolder) bool { return h.Deadline <= m.now })
		}
	}
	fresh, queue, renew := 0, map[string]bool{}, map[string]bool{}
	for _, k := range keys {
		n := m.names[k]
		switch {
		case n == nil:
			fresh++
		case holderOf(n, c.Owner) >= 0:
			if n.holders[holderOf(n, c.Owner)].write != c.Claim.Write {
				r.errInvalid = true
				return r
			}
			renew[k] = true
		case len(n.queue) == 0 && m.fits(n, c.Claim.Write):
			fresh++
		default:
			if len(queue) == 0 {
				r.Grant = n.blocker(c.Claim.InTheWay())
			}
			if !c.Wait {
				return r
			}
			if i := waiterOf(n, c.Owner); i >= 0 {
				if n.queue[i].write != c.Claim.Write || len(keys) > 1 {
					r.errInvalid = true
				} else {
					r.Queued = true
				}
				return r
			}
			if m.maxWaiters > 0 && len(n.queue) >= m.maxWaiters {
				r.errFull = true
				return r
			}
			if n.claim.Kind != Mutex {
				fresh++
			}
			queue[k] = true
		}
	}
	if m.maxKeys > 0 && m.counted()+fresh > m.maxKeys {
		r.errFull = true
		return r
	}
	// A set that queues starts its caps when it completes: until the
	// owner's next acquire of its keys with a cap (its closing refresh),
	// what it takes or is handed has its cap pending.
	maxHold := c.MaxHold
	if len(queue) > 0 && len(keys) > 1 && maxHold > 0 {
		maxHold = CapPending
	}
	for _, k := range keys {
		n := m.names[k]
		switch {
		case queue[k]:
			n.queue = append(n.queue, modelWaiter{c.Owner, c.TTL, c.Claim.Write, maxHold})
			r.Grants = append(r.Grants, Grant{})
		case renew[k]:
			h := &n.holders[holderOf(n, c.Owner)]
			if h.pending && maxHold > 0 && maxHold != CapPending {
				h.pending, h.cap = false, m.until(maxHold)
			}
			h.Deadline = h.until(m.until(c.TTL)) // its cap stays the first grant's
			r.Grants = append(r.Grants, h.Grant)
			// Let in by the lapse above, it is told as it stands.
			for i := range r.Handoffs {
				if r.Handoffs[i].Key == k && r.Handoffs[i].Owner == c.Owner {
					r.Handoffs[i] = h.Grant
				}
			}
		default:
			if n == nil {
				n = &modelName{claim: name}
				m.names[k] = n
			}
			r.Grants = append(r.Grants, m.grant(k, n, c.Owner, c.TTL, c.Claim.Write, c.Fence, maxHold))
		}
	}
	r.OK, r.Queued = len(queue) == 0, len(queue) > 0
	if r.OK {
		r.Grant = r.Grants[0]
	}
	return r
}

// expireDue is what a live engine does before each batch: the names
// whose grants are due, earliest deadline first, ties by key, each ending
// all its due grants at once.
func (m *model) expireDue() []Grant {
	var r modelResult
	for _, k := range m.dueNames(m.now) {
		m.drop(k, m.names[k], 0, &r, func(h modelHolder) bool { return h.Deadline <= m.now })
	}
	return r.Handoffs
}

// dueNames are the names with a grant due at now, by their earliest
// deadline, then key.
func (m *model) dueNames(now int64) []string {
	var keys []string
	for k, n := range m.names {
		if n.blocker(false).Deadline <= now {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(m.names[a].blocker(false).Deadline, m.names[b].blocker(false).Deadline), strings.Compare(a, b))
	})
	return keys
}

// due is every due grant, name by name as dueNames orders them, each
// name's by deadline then fence.
func (m *model) due(now int64, limit int) []Grant {
	var out []Grant
	for _, k := range m.dueNames(now) {
		var gs []Grant
		for _, h := range m.names[k].holders {
			if h.Deadline <= now {
				gs = append(gs, h.Grant)
			}
		}
		slices.SortFunc(gs, func(a, b Grant) int {
			return cmp.Or(cmp.Compare(a.Deadline, b.Deadline), cmp.Compare(a.Fence, b.Fence))
		})
		out = append(out, gs...)
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

func (m *model) info(key string) (Info, bool) {
	n := m.names[key]
	if n == nil {
		return Info{}, false
	}
	in := Info{Grant: n.blocker(false), Waiters: len(n.queue)}
	if n.claim.Kind == Mutex {
		for _, q := range n.queue {
			in.Queue = append(in.Queue, QueuedWaiter{Owner: q.owner})
		}
		return in, true
	}
	s := &Shared{Kind: n.claim.Kind, Limit: n.claim.Limit}
	for _, h := range n.holders {
		s.Holders = append(s.Holders, h.Grant)
		s.Writer = s.Writer || h.write
	}
	for _, q := range n.queue {
		s.Queue = append(s.Queue, QueuedWaiter{Owner: q.owner, Write: q.write})
	}
	in.Shared = s
	return in, true
}

// waiters is every queued (key, owner), sorted.
func (m *model) waiters() []Waiter {
	var out []Waiter
	for k, n := range m.names {
		for _, w := range n.queue {
			out = append(out, Waiter{Key: k, Owner: w.owner})
		}
	}
	slices.SortFunc(out, func(a, b Waiter) int { return cmp.Or(cmp.Compare(a.Key, b.Key), cmp.Compare(a.Owner, b.Owner)) })
	return out
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
