package driverstest

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/zerotal/lock/drivers"
)

// Model is the contract's waiting rules as a pure, deterministic state
// machine: what every backend must answer, written once. Time is an input
// (Advance), never the wall clock, so the same steps always give the same
// answers; RunModel drives real backends with random schedules and
// compares every answer with it.
//
// The rules it keeps:
//   - a key takes the claim of the acquire that creates it (a mutex, a
//     semaphore of N, a read/write lock) and keeps it while anyone holds
//     or waits for it; an acquire of another kind or limit meanwhile is
//     refused with an error matching drivers.ErrInvalid;
//   - admission: an acquire is granted at once only when nobody waits
//     for the key and it fits (a mutex and a write when nobody holds; a
//     semaphore's slot while fewer than its limit hold; a read while no
//     writer holds and fewer than drivers.MaxHolders do); a set of keys
//     only when every key is, and then all of them in one step;
//   - waits queue first come, first served per key; a set's wait takes
//     its free keys and queues for the busy ones in one step, and holds
//     what it took with no deadline until its last key comes, when every
//     key starts its TTL; the head of a queue is let in whenever a grant
//     ends or a waiter leaves, then the next, while they fit (a waiting
//     writer stops the readers behind it);
//   - lapse: a grant ends at its deadline; a wait that ended (its ctx, its
//     process killed) leaves its places and lets go of what it took;
//   - a cap on total hold time (Request.MaxHold): a grant made at t ends
//     by t+MaxHold at the latest; a refresh (Extend, or an acquire of what
//     the owner holds) sets min(now+TTL, cap) and keeps the cap of the
//     first grant, whatever MaxHold it asks; at the cap the grant lapses
//     as at its deadline (it is its deadline); a waiter's cap counts from
//     its grant, a set's wait's from the moment its last key comes, when
//     its TTL starts;
//   - fences strictly increase per key with every new grant; a refresh by
//     the holder (an acquire of what it holds, or Extend) keeps its fence;
//     holding one side of a read/write lock, an owner is refused the
//     other (ErrInvalid).
//
// A Model is not safe for concurrent use; Clone copies it.
type Model struct {
	now   time.Duration
	fence uint64
	keys  map[string]*modelKey
	waits map[string]*modelWait // by owner: the owner's wait in progress
}

// forever is the deadline of a key a set's wait took while it still waits
// for others: it lapses only once the set is complete.
const forever = time.Duration(math.MaxInt64)

type modelKey struct {
	claim   drivers.Claim // Kind and Limit while anyone holds or waits
	holders []modelHolder // by fence
	queue   []*modelWait  // first come, first served
}

type modelHolder struct {
	owner    string
	fence    uint64
	deadline time.Duration // never past cap
	cap      time.Duration // the end of its hold cap; forever: none (yet)
	write    bool
}

// until sets h's deadline to d, or to its cap if that comes first.
func (h *modelHolder) until(d time.Duration) { h.deadline = min(d, h.cap) }

// capFrom starts h's cap of maxHold now (0: none) and clamps its
// deadline to it.
func (m *Model) capFrom(h *modelHolder, maxHold time.Duration) {
	if maxHold > 0 {
		h.cap = m.after(maxHold)
	}
	h.until(h.deadline)
}

type modelWait struct {
	owner  string
	req    drivers.Request
	fences []uint64        // by req.Keys: set once the key is held
	took   map[string]bool // keys granted to this wait (not refreshed)
	left   int             // keys still queued for
}

// Outcome is what a step answered, as a backend must answer it.
type Outcome struct {
	// Grant is Acquire's answer: Acquired with Fences, or Busy naming the
	// first key in the way and its holder (for a queued wait too).
	Grant drivers.Grant
	// Queued: an Acquire with Wait that waits; its grant comes as a Done
	// of a later step.
	Queued bool
	// OK is Release's and Extend's answer.
	OK bool
	// Err is an error the step is refused with (drivers.ErrInvalid).
	Err error
	// Done are the waits this step ended, in the order they ended.
	Done []Done
}

// Done is the end of a wait: its grant, or the error it returns.
type Done struct {
	Owner  string
	Fences []uint64 // in the order of the request's keys
	// Err: a set's wait broken by a force release of a key it had taken
	// (a *drivers.NotAcquiredError naming it), having let go of the others.
	Err error
}

// NewModel returns an empty model at time 0.
func NewModel() *Model {
	return &Model{keys: map[string]*modelKey{}, waits: map[string]*modelWait{}}
}

// Now is the model's time.
func (m *Model) Now() time.Duration { return m.now }

// Waiting reports whether owner has a wait in progress.
func (m *Model) Waiting(owner string) bool { return m.waits[owner] != nil }

// Keys returns every key someone holds, sorted.
func (m *Model) Keys() []string {
	out := make([]string, 0, len(m.keys))
	for k := range m.keys {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Clone returns an independent copy of m.
func (m *Model) Clone() *Model {
	c := &Model{now: m.now, fence: m.fence, keys: make(map[string]*modelKey, len(m.keys)), waits: make(map[string]*modelWait, len(m.waits))}
	for o, w := range m.waits {
		cw := *w
		cw.fences = slices.Clone(w.fences)
		cw.took = make(map[string]bool, len(w.took))
		for k := range w.took {
			cw.took[k] = true
		}
		c.waits[o] = &cw
	}
	for k, mk := range m.keys {
		ck := &modelKey{claim: mk.claim, holders: slices.Clone(mk.holders), queue: make([]*modelWait, len(mk.queue))}
		for i, w := range mk.queue {
			ck.queue[i] = c.waits[w.owner]
		}
		c.keys[k] = ck
	}
	return c
}

// Acquire is drivers.Driver's Acquire of r at the model's time.
func (m *Model) Acquire(r drivers.Request) Outcome {
	if err := checkRequest(r); err != nil {
		return Outcome{Err: err}
	}
	if m.waits[r.Owner] != nil {
		return Outcome{Err: &drivers.InvalidError{Field: "owner", Reason: "already waits (the model takes one request of an owner at a time)"}}
	}
	const (
		refresh = iota
		take
		busy
	)
	plan, first := make([]int, len(r.Keys)), -1
	for i, k := range r.Keys {
		mk := m.keys[k]
		switch {
		case mk == nil:
			plan[i] = take
		case mk.claim.Kind != r.Claim.Kind || mk.claim.Limit != r.Claim.Limit:
			return Outcome{Err: drivers.KindMismatch(k, mk.claim.Describe(), r.Claim)}
		case mk.holder(r.Owner) >= 0:
			if h := mk.holders[mk.holder(r.Owner)]; h.write != r.Claim.Write {
				return Outcome{Err: &drivers.InvalidError{Field: "claim", Reason: fmt.Sprintf("owner holds the other side of %q; release it first", k)}}
			}
			plan[i] = refresh
		case len(mk.queue) == 0 && mk.fits(r.Claim.Write):
			plan[i] = take
		default:
			plan[i] = busy
			if first < 0 {
				first = i
			}
		}
	}
	if first >= 0 && !r.Wait {
		return Outcome{Grant: drivers.Grant{Busy: m.busy(r.Keys[first], r.Claim)}}
	}
	deadline := m.after(r.TTL)
	var w *modelWait
	if first >= 0 {
		deadline = forever
		w = &modelWait{owner: r.Owner, req: r, fences: make([]uint64, len(r.Keys)), took: map[string]bool{}}
		w.req.Keys = slices.Clone(r.Keys)
	}
	fences := make([]uint64, len(r.Keys))
	for i, k := range r.Keys {
		switch plan[i] {
		case refresh:
			mk := m.keys[k]
			h := &mk.holders[mk.holder(r.Owner)]
			h.until(deadline) // the first grant's cap stays
			fences[i] = h.fence
		case take:
			fences[i] = m.grant(k, r.Owner, r.Claim, deadline, r.MaxHold)
			if w != nil {
				w.took[k] = true
			}
		case busy:
			m.keys[k].queue = append(m.keys[k].queue, w)
			w.left++
		}
	}
	if w == nil {
		return Outcome{Grant: drivers.Grant{Acquired: true, Fences: fences}}
	}
	copy(w.fences, fences)
	m.waits[r.Owner] = w
	return Outcome{Queued: true, Grant: drivers.Grant{Busy: m.busy(r.Keys[first], r.Claim)}}
}

// checkRequest refuses what no backend is asked: the Manager checks it.
func checkRequest(r drivers.Request) error {
	if len(r.Keys) == 0 || len(r.Keys) > drivers.MaxMultiKeys {
		return &drivers.InvalidError{Field: "keys", Reason: fmt.Sprintf("must name between 1 and %d keys", drivers.MaxMultiKeys)}
	}
	for i, k := range r.Keys {
		if k == "" || slices.Contains(r.Keys[:i], k) {
			return &drivers.InvalidError{Field: "keys", Reason: fmt.Sprintf("key %q is empty or named twice", k)}
		}
	}
	switch {
	case r.Owner == "":
		return &drivers.InvalidError{Field: "owner", Reason: "empty"}
	case r.TTL <= 0:
		return &drivers.InvalidError{Field: "ttl", Reason: "must be positive"}
	case r.MaxHold < 0:
		return &drivers.InvalidError{Field: "max_hold", Reason: "must not be negative"}
	case r.Claim != drivers.Claim{}:
		return r.Claim.CheckShared()
	}
	return nil
}

// holder is owner's index among k's holders, or -1.
func (k *modelKey) holder(owner string) int {
	return slices.IndexFunc(k.holders, func(h modelHolder) bool { return h.owner == owner })
}

// fits reports whether a grant of the given side may join k's holders.
func (k *modelKey) fits(write bool) bool {
	n := len(k.holders)
	switch {
	case k.claim.Kind == drivers.Semaphore:
		return uint32(n) < k.claim.Limit
	case k.claim.Kind == drivers.Mutex || write:
		return n == 0
	}
	return n == 0 || !k.holders[0].write && n < drivers.MaxHolders
}

// busy is what a refused acquire of key with claim c is told: the holder
// in the way (drivers.Claim.InTheWay).
func (m *Model) busy(key string, c drivers.Claim) drivers.Busy {
	mk := m.keys[key]
	if len(mk.holders) == 0 {
		return drivers.Busy{Key: key}
	}
	last := c.InTheWay()
	b := mk.holders[0]
	for _, h := range mk.holders[1:] {
		later := h.deadline > b.deadline || h.deadline == b.deadline && h.fence > b.fence
		if later == last {
			b = h
		}
	}
	return drivers.Busy{Key: key, HeldBy: drivers.HeldBy{Holder: drivers.HolderOf(b.owner), TTL: m.left(b.deadline)}}
}

func (m *Model) left(deadline time.Duration) time.Duration {
	if deadline == forever {
		return forever
	}
	return deadline - m.now
}

// after is now+ttl, saturating.
func (m *Model) after(ttl time.Duration) time.Duration {
	if ttl > forever-m.now {
		return forever
	}
	return m.now + ttl
}

// grant adds a new grant of key, with the next fence, capped at
// now+maxHold unless it has no deadline yet (a set's wait's key, whose
// cap starts with its TTL).
func (m *Model) grant(key, owner string, c drivers.Claim, deadline, maxHold time.Duration) uint64 {
	mk := m.keys[key]
	if mk == nil {
		mk = &modelKey{claim: drivers.Claim{Kind: c.Kind, Limit: c.Limit}}
		m.keys[key] = mk
	}
	m.fence++
	h := modelHolder{owner: owner, fence: m.fence, deadline: deadline, cap: forever, write: c.Write}
	if deadline != forever {
		m.capFrom(&h, maxHold)
	}
	mk.holders = append(mk.holders, h)
	return m.fence
}

// Release is drivers.Driver's Release: OK when owner held key.
func (m *Model) Release(key, owner string) Outcome {
	mk := m.keys[key]
	if mk == nil || mk.holder(owner) < 0 {
		return Outcome{}
	}
	out := Outcome{OK: true}
	mk.holders = slices.Delete(mk.holders, mk.holder(owner), mk.holder(owner)+1)
	m.admit(key, &out)
	return out
}

// Extend is drivers.Extender's Extend: a new deadline, never past the
// grant's cap, never a grant.
func (m *Model) Extend(key, owner string, ttl time.Duration) Outcome {
	mk := m.keys[key]
	if mk == nil || mk.holder(owner) < 0 {
		return Outcome{}
	}
	mk.holders[mk.holder(owner)].until(m.after(ttl))
	return Outcome{OK: true}
}

// ForceRelease is drivers.Driver's ForceRelease: every grant of key ends.
// A set's wait that had taken key is broken: it lets go of the rest.
func (m *Model) ForceRelease(key string) Outcome {
	mk := m.keys[key]
	if mk == nil {
		return Outcome{OK: true}
	}
	out := Outcome{OK: true}
	var broken []string
	for _, h := range mk.holders {
		if w := m.waits[h.owner]; w != nil && w.took[key] {
			delete(w.took, key)
			broken = append(broken, h.owner)
		}
	}
	mk.holders = nil
	m.admit(key, &out)
	for _, o := range broken {
		m.end(o, &out)
		out.Done = append(out.Done, Done{Owner: o, Err: &drivers.NotAcquiredError{Key: key}})
	}
	return out
}

// Cancel ends owner's wait (its ctx ended): its places are given up and
// what it took for a set is let go; the waiters behind may get in.
func (m *Model) Cancel(owner string) Outcome {
	var out Outcome
	m.end(owner, &out)
	return out
}

// Kill is the death of a process whose owners are owners: their places
// are gone, and their grants stay until their deadlines, those a set's
// wait took too (nobody is left to let go of them), counted from now.
func (m *Model) Kill(owners ...string) Outcome {
	var out Outcome
	for _, o := range owners {
		if w := m.waits[o]; w != nil {
			for k := range w.took {
				mk := m.keys[k]
				if i := mk.holder(o); i >= 0 && mk.holders[i].deadline == forever {
					mk.holders[i].deadline = m.after(w.req.TTL)
					m.capFrom(&mk.holders[i], w.req.MaxHold)
				}
			}
			clear(w.took)
		}
		m.end(o, &out)
	}
	return out
}

// end withdraws owner's wait, if any.
func (m *Model) end(owner string, out *Outcome) {
	w := m.waits[owner]
	if w == nil {
		return
	}
	delete(m.waits, owner)
	for _, k := range w.req.Keys {
		mk := m.keys[k]
		if mk == nil {
			continue
		}
		if i := slices.Index(mk.queue, w); i >= 0 {
			mk.queue = slices.Delete(mk.queue, i, i+1)
			m.admit(k, out)
			continue
		}
		i := mk.holder(owner)
		switch {
		case i < 0:
		case w.took[k]:
			mk.holders = slices.Delete(mk.holders, i, i+1)
			m.admit(k, out)
		case mk.holders[i].deadline == forever:
			mk.holders[i].until(m.after(w.req.TTL)) // held before the wait: refreshed
		}
	}
}

// admit lets waiters in from the head of key's queue while they fit, and
// forgets key once nobody holds it.
func (m *Model) admit(key string, out *Outcome) {
	mk := m.keys[key]
	for len(mk.queue) > 0 && mk.fits(mk.queue[0].req.Claim.Write) {
		w := mk.queue[0]
		mk.queue = mk.queue[1:]
		w.left--
		deadline := forever
		if w.left == 0 {
			deadline = m.after(w.req.TTL)
		}
		w.fences[slices.Index(w.req.Keys, key)] = m.grant(key, w.owner, w.req.Claim, deadline, w.req.MaxHold)
		w.took[key] = true
		if w.left == 0 {
			m.complete(w, out)
		}
	}
	if len(mk.holders) == 0 && len(mk.queue) == 0 {
		delete(m.keys, key)
	}
}

// complete ends w granted: every key it holds starts its TTL now, and
// every key it took its cap.
func (m *Model) complete(w *modelWait, out *Outcome) {
	delete(m.waits, w.owner)
	for _, k := range w.req.Keys {
		mk := m.keys[k]
		if i := mk.holder(w.owner); i >= 0 && mk.holders[i].deadline == forever {
			h := &mk.holders[i]
			h.until(m.after(w.req.TTL))
			if w.took[k] && h.cap == forever {
				m.capFrom(h, w.req.MaxHold)
			}
		}
	}
	out.Done = append(out.Done, Done{Owner: w.owner, Fences: slices.Clone(w.fences)})
}

// Advance moves the model's time to to (never back), ending every grant
// whose deadline has come, earliest first; each waiter let in by a lapse
// is granted at that lapse's time.
func (m *Model) Advance(to time.Duration) Outcome {
	var out Outcome
	for {
		key, at, ok := m.nextLapse()
		if !ok || at > to {
			break
		}
		m.now = max(m.now, at)
		mk := m.keys[key]
		i := slices.IndexFunc(mk.holders, func(h modelHolder) bool { return h.deadline == at })
		mk.holders = slices.Delete(mk.holders, i, i+1)
		m.admit(key, &out)
	}
	m.now = max(m.now, to)
	return out
}

// nextLapse is the grant that ends first: by deadline, then fence.
func (m *Model) nextLapse() (key string, at time.Duration, ok bool) {
	var fence uint64
	for k, mk := range m.keys {
		for _, h := range mk.holders {
			if !ok || h.deadline < at || h.deadline == at && h.fence < fence {
				key, at, fence, ok = k, h.deadline, h.fence, true
			}
		}
	}
	return key, at, ok && at != forever
}

// Holding is key as a drivers.Inspector describes it: its claim, holders
// by fence (Remaining from the model's time) and waiters in order; ok is
// false when nobody holds it.
func (m *Model) Holding(key string) (h drivers.Holding, ok bool) {
	mk := m.keys[key]
	if mk == nil {
		return drivers.Holding{}, false
	}
	h.Claim = mk.claim
	for _, x := range mk.holders {
		h.Holders = append(h.Holders, drivers.Holder{Owner: x.owner, Fence: x.fence, Remaining: m.left(x.deadline), Write: x.write})
	}
	for _, w := range mk.queue {
		h.Waiters = append(h.Waiters, drivers.Waiting{Owner: w.owner, Write: w.req.Claim.Write})
	}
	h.WaiterCount = len(mk.queue)
	return h, true
}

// Held reports the keys owner holds, sorted.
func (m *Model) Held(owner string) []string {
	var out []string
	for k, mk := range m.keys {
		if mk.holder(owner) >= 0 {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
