package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
)

// The shared names' property test: random replicated commands on a
// semaphore, a read/write lock and a mutex name (with claims of the wrong
// kind or limit among them), compared with a plain model answer by answer
// and state by state, through snapshots, under a referee that knows only
// the promises: never more than Limit holders, never a writer beside
// anyone, every new grant of a name above every earlier fence of it, and
// waiters let in in the order they queued.

// sharedModel is one shared name written out plainly.
type sharedModel struct {
	kind    Kind
	limit   uint32
	holders []sharedHolder // in grant order
	queue   []sharedWaiter
}

type sharedHolder struct {
	Grant
	write bool
}

type sharedWaiter struct {
	owner string
	ttl   time.Duration
	write bool
}

// sharedWorld is the model of a whole table of shared names.
type sharedWorld struct {
	names   map[string]*sharedModel
	mutexes *model // the mutex names, by the mutex model
	counter uint64
	now     int64
	// maxKeys counts a key per mutex and one per holder and per waiter
	// of a shared name; maxHolders caps a name's holders.
	maxKeys, maxHolders int
}

func newSharedWorld(maxKeys, maxHolders int) *sharedWorld {
	w := &sharedWorld{names: map[string]*sharedModel{}, mutexes: newModel(maxKeys, 0), maxKeys: maxKeys, maxHolders: maxHolders}
	w.mutexes.others = w.sharedCount
	return w
}

// sharedCount is every holder and waiter of the shared names.
func (w *sharedWorld) sharedCount() int {
	n := 0
	for _, s := range w.names {
		n += len(s.holders) + len(s.queue)
	}
	return n
}

func (w *sharedWorld) full() bool {
	return w.maxKeys > 0 && len(w.mutexes.locks)+w.sharedCount() >= w.maxKeys
}

func (w *sharedWorld) fence(want uint64) uint64 {
	if want > w.counter {
		w.counter = want
	} else {
		w.counter++
	}
	w.mutexes.counter = w.counter
	return w.counter
}

func (w *sharedWorld) fits(n *sharedModel, write bool) bool {
	switch {
	case n.kind == Semaphore:
		return uint32(len(n.holders)) < n.limit
	case write:
		return len(n.holders) == 0
	}
	return len(n.holders) == 0 || (!n.holders[0].write && len(n.holders) < w.maxHolders)
}

// blocker is the holder a refusal names (drivers.Claim.InTheWay): the
// earliest deadline, lowest fence among equals; with last (a write) the
// latest deadline, highest fence among equals.
func (n *sharedModel) blocker(key string, last bool) Grant {
	if len(n.holders) == 0 {
		return Grant{Key: key}
	}
	b := n.holders[0].Grant
	for _, h := range n.holders[1:] {
		if !last && (h.Deadline < b.Deadline || h.Deadline == b.Deadline && h.Fence < b.Fence) ||
			last && (h.Deadline > b.Deadline || h.Deadline == b.Deadline && h.Fence > b.Fence) {
			b = h.Grant
		}
	}
	return b
}

func (w *sharedWorld) grant(key string, n *sharedModel, owner string, ttl time.Duration, write bool, want uint64) Grant {
	d := w.now + int64(ttl)
	g := Grant{Key: key, Owner: owner, Fence: w.fence(want), Deadline: d}
	n.holders = append(n.holders, sharedHolder{g, write})
	return g
}

// admit lets waiters in from the head while they fit.
func (w *sharedWorld) admit(key string, n *sharedModel, want uint64, r *modelResult) {
	for len(n.queue) > 0 && w.fits(n, n.queue[0].write) {
		q := n.queue[0]
		n.queue = n.queue[1:]
		r.Handoffs = append(r.Handoffs, w.grant(key, n, q.owner, q.ttl, q.write, want))
	}
}

func (w *sharedWorld) purge(key string, n *sharedModel, want uint64, r *modelResult) {
	before := len(n.holders)
	n.holders = slices.DeleteFunc(n.holders, func(h sharedHolder) bool { return h.Deadline <= w.now })
	if len(n.holders) != before {
		w.admit(key, n, want, r)
	}
}

func (w *sharedWorld) settle(key string, n *sharedModel) {
	if len(n.holders) == 0 {
		delete(w.names, key)
	}
}

func (w *sharedWorld) holderIndex(n *sharedModel, owner string) int {
	return slices.IndexFunc(n.holders, func(h sharedHolder) bool { return h.Owner == owner })
}

func (w *sharedWorld) apply(c Command) modelResult {
	if c.Now > w.now {
		w.now = c.Now
	}
	w.mutexes.now = w.now
	n := w.names[c.Key]
	if n == nil {
		if c.Op == OpAcquireShared && c.Claim.Kind != Mutex {
			return w.create(c)
		}
		if c.Op == OpAcquireShared && checkClaim(c.Claim) != nil {
			return modelResult{errInvalid: true}
		}
		if c.Op == OpAcquireShared {
			c.Op = OpAcquire
		}
		r := w.mutexes.apply(c)
		w.counter = w.mutexes.counter
		return r
	}
	var r modelResult
	switch c.Op {
	case OpAcquire:
		r.errInvalid = true
	case OpAcquireShared:
		r = w.acquire(c, n)
	case OpRelease:
		if i := w.holderIndex(n, c.Owner); i >= 0 && n.holders[i].Deadline > w.now {
			n.holders = slices.Delete(n.holders, i, i+1)
			r.OK = true
			w.admit(c.Key, n, c.Fence, &r)
		}
	case OpExtend:
		i := w.holderIndex(n, c.Owner)
		if i < 0 || n.holders[i].Deadline <= w.now {
			r.Grant = n.blocker(c.Key, false)
			break
		}
		n.holders[i].Deadline = w.now + int64(c.TTL)
		r.OK, r.Grant = true, n.holders[i].Grant
	case OpForceRelease:
		n.holders = nil
		r.OK = true
		w.admit(c.Key, n, c.Fence, &r)
	case OpExpire:
		i := w.holderIndex(n, c.Owner)
		if i >= 0 && n.holders[i].Fence == c.ExpectFence && n.holders[i].Deadline <= w.now {
			n.holders = slices.Delete(n.holders, i, i+1)
			r.OK = true
			w.admit(c.Key, n, c.Fence, &r)
		}
	case OpCancelWait:
		if i := slices.IndexFunc(n.queue, func(q sharedWaiter) bool { return q.owner == c.Owner }); i >= 0 {
			n.queue = slices.Delete(n.queue, i, i+1)
			r.OK = true
			w.admit(c.Key, n, c.Fence, &r)
		}
	case OpTick:
		r.OK = true
	default:
		r.errInvalid = true
	}
	w.settle(c.Key, n)
	return r
}

func (w *sharedWorld) create(c Command) modelResult {
	if c.Key == "" || c.Owner == "" || c.TTL <= 0 || checkClaim(c.Claim) != nil {
		return modelResult{errInvalid: true}
	}
	if c.Claim.Kind == Semaphore && c.Claim.Limit > uint32(w.maxHolders) {
		return modelResult{errInvalid: true}
	}
	if w.mutexes.locks[c.Key] != nil {
		return modelResult{errInvalid: true}
	}
	if w.full() {
		return modelResult{errFull: true}
	}
	n := &sharedModel{kind: c.Claim.Kind, limit: c.Claim.Limit}
	w.names[c.Key] = n
	g := w.grant(c.Key, n, c.Owner, c.TTL, c.Claim.Write, c.Fence)
	return modelResult{Result: Result{OK: true, Grant: g}}
}

func (w *sharedWorld) acquire(c Command, n *sharedModel) modelResult {
	var r modelResult
	if c.Owner == "" || c.TTL <= 0 || checkClaim(c.Claim) != nil || n.kind != c.Claim.Kind || n.limit != c.Claim.Limit ||
		(c.Claim.Kind == Semaphore && c.Claim.Limit > uint32(w.maxHolders)) {
		r.errInvalid = true
		return r
	}
	w.purge(c.Key, n, c.Fence, &r)
	if i := w.holderIndex(n, c.Owner); i >= 0 {
		if n.holders[i].write != c.Claim.Write {
			r.errInvalid = true
			return r
		}
		n.holders[i].Deadline = w.now + int64(c.TTL)
		r.OK, r.Grant = true, n.holders[i].Grant
		return r
	}
	if len(n.queue) == 0 && w.fits(n, c.Claim.Write) {
		if w.full() {
			r.errFull = true
			return r
		}
		r.OK, r.Grant = true, w.grant(c.Key, n, c.Owner, c.TTL, c.Claim.Write, c.Fence)
		return r
	}
	r.Grant = n.blocker(c.Key, c.Claim.InTheWay())
	if !c.Wait {
		return r
	}
	if i := slices.IndexFunc(n.queue, func(q sharedWaiter) bool { return q.owner == c.Owner }); i >= 0 {
		if n.queue[i].write != c.Claim.Write {
			r.errInvalid = true
			return r
		}
		r.Queued = true
		return r
	}
	if w.full() {
		r.errFull = true
		return r
	}
	n.queue = append(n.queue, sharedWaiter{c.Owner, c.TTL, c.Claim.Write})
	r.Queued = true
	return r
}

func (w *sharedWorld) info(key string) (Info, bool) {
	n := w.names[key]
	if n == nil {
		return w.mutexes.info(key)
	}
	s := &Shared{Kind: n.kind, Limit: n.limit}
	for _, h := range n.holders {
		s.Holders = append(s.Holders, h.Grant)
		s.Writer = s.Writer || h.write
	}
	for _, q := range n.queue {
		s.Queue = append(s.Queue, QueuedWaiter{Owner: q.owner, Write: q.write})
	}
	return Info{Grant: n.blocker(key, false), Waiters: len(n.queue), Shared: s}, true
}

var (
	sharedKeys   = []string{"sem", "rw", "mx"}
	sharedOwners = []string{"p", "q", "r", "s", "t", "u"}
)

// claimFor draws a claim for key: mostly its own kind, sometimes another.
func claimFor(rng *rand.Rand, key string) Claim {
	if rng.IntN(12) == 0 {
		return []Claim{{}, {Kind: Semaphore, Limit: 2}, {Kind: RWLock}, {Kind: Semaphore}, {Kind: RWLock, Limit: 1},
			{Kind: Semaphore, Limit: 4}, {Kind: Semaphore, Limit: drivers.MaxHolders + 1}}[rng.IntN(7)]
	}
	switch key {
	case "sem":
		return Claim{Kind: Semaphore, Limit: 3}
	case "rw":
		return Claim{Kind: RWLock, Write: rng.IntN(3) == 0}
	}
	return Claim{}
}

func randomSharedCommand(rng *rand.Rand, w *sharedWorld, now int64, fence uint64) Command {
	key := sharedKeys[rng.IntN(len(sharedKeys))]
	c := Command{Key: key, Owner: sharedOwners[rng.IntN(len(sharedOwners))], Now: now, Fence: fence}
	held := func() (string, uint64, bool) {
		if n := w.names[key]; n != nil && len(n.holders) > 0 {
			h := n.holders[rng.IntN(len(n.holders))]
			return h.Owner, h.Fence, true
		}
		if l := w.mutexes.locks[key]; l != nil {
			return l.owner, l.fence, true
		}
		return "", 0, false
	}
	switch n := rng.IntN(100); {
	case n < 45:
		c.Op, c.TTL, c.Wait, c.Claim = OpAcquireShared, time.Duration(1+rng.IntN(200)), rng.IntN(3) > 0, claimFor(rng, key)
	case n < 65:
		c.Op = OpRelease
		if o, _, ok := held(); ok && rng.IntN(4) > 0 {
			c.Owner = o
		}
	case n < 72:
		c.Op, c.TTL = OpExtend, time.Duration(1+rng.IntN(200))
		if o, _, ok := held(); ok {
			c.Owner = o
		}
	case n < 85:
		c.Op = OpExpire
		if o, f, ok := held(); ok {
			c.Owner, c.ExpectFence = o, f
		}
	case n < 93:
		c.Op = OpCancelWait
	case n < 96:
		c.Op = OpForceRelease
	default:
		c.Op = OpTick
	}
	return c
}

func TestProperty_SharedNamesMatchModelAndKeepTheirPromises(t *testing.T) {
	for seed := range uint64(30) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 99))
			// Odd seeds: a key limit that holders and waiters reach, and
			// a holder cap that readers reach (and a semaphore of 4 is
			// above).
			maxKeys, maxHolders := 0, drivers.MaxHolders
			if seed%2 == 1 {
				maxKeys, maxHolders = 7, 3
			}
			w := newSharedWorld(maxKeys, maxHolders)
			e := newReplicated(t, Config{MaxKeys: maxKeys, MaxHoldersPerKey: maxHolders})
			ref := newReferee(maxHolders)
			now := t0
			var index uint64
			for step := range 600 {
				index += uint64(1 + rng.IntN(2))
				now += int64(rng.IntN(40)) - 5
				c := randomSharedCommand(rng, w, now, index)
				before, _ := w.info(c.Key)
				want := w.apply(c)
				got := mustApply(t, e, c)[0]
				if d := want.matchesShared(got); d != "" {
					t.Fatalf("step %d %+v: %s", step, c, d)
				}
				ref.observe(t, step, c, got, before)
				for _, k := range sharedKeys {
					gi, ok, err := e.Get(t.Context(), k)
					wi, wok := w.info(k)
					if err != nil || ok != wok || !reflect.DeepEqual(gi, wi) {
						t.Fatalf("step %d: Get(%q) = %+v %+v %v %v, model %+v %+v %v", step, k, gi, gi.Shared, ok, err, wi, wi.Shared, wok)
					}
					if gi.Shared != nil {
						ref.check(t, step, k, gi)
					}
				}
				checkRestorable(t, e, sharedKeys)
				if step%100 == 99 {
					e = restoredCopy(t, e)
				}
			}
		})
	}
}

func (r modelResult) matchesShared(got Result) string {
	switch {
	case r.errInvalid && !errors.Is(got.Err, drivers.ErrInvalid):
		return fmt.Sprintf("want ErrInvalid, got %v", got.Err)
	case r.errFull && !errors.Is(got.Err, drivers.ErrFull):
		return fmt.Sprintf("want ErrFull, got %v", got.Err)
	case !r.errInvalid && !r.errFull && got.Err != nil:
		return fmt.Sprintf("unexpected error %v", got.Err)
	}
	if r.errInvalid || r.errFull {
		return ""
	}
	if !sameResult(r.Result, got) {
		return "got " + fmtResult(got) + " want " + fmtResult(r.Result)
	}
	return ""
}

// referee holds the engine to its promises, whatever the model says.
type referee struct {
	lastFence  map[string]uint64 // the highest fence seen per name
	maxHolders int
}

func newReferee(maxHolders int) *referee {
	return &referee{lastFence: map[string]uint64{}, maxHolders: maxHolders}
}

// observe checks one command's new grants: each above every earlier fence
// of its name, and hand-offs in the order the waiters queued (before).
func (f *referee) observe(t *testing.T, step int, c Command, r Result, before Info) {
	t.Helper()
	var fresh []Grant
	if r.OK && (c.Op == OpAcquire || c.Op == OpAcquireShared) && r.Grant.Fence > f.lastFence[c.Key] {
		fresh = append(fresh, r.Grant)
	}
	fresh = append(fresh, r.Handoffs...)
	slices.SortFunc(fresh, func(a, b Grant) int { return cmpFence(a.Fence, b.Fence) })
	// A mutex acquire that found the key expired reports the head's grant
	// as its hand-off, and as its own when it was the head.
	fresh = slices.CompactFunc(fresh, func(a, b Grant) bool { return a.Fence == b.Fence })
	for _, g := range fresh {
		if g.Fence <= f.lastFence[g.Key] {
			t.Fatalf("step %d: %s granted fence %d after fence %d", step, g.Key, g.Fence, f.lastFence[g.Key])
		}
		f.lastFence[g.Key] = g.Fence
	}
	if before.Shared == nil || len(r.Handoffs) == 0 {
		return
	}
	queue := before.Shared.Queue
	if c.Op == OpCancelWait {
		queue = slices.DeleteFunc(slices.Clone(queue), func(q QueuedWaiter) bool { return q.Owner == c.Owner })
	}
	for i, h := range r.Handoffs {
		if i >= len(queue) || queue[i].Owner != h.Owner {
			t.Fatalf("step %d: hand-off %d went to %s; the queue was %+v", step, i, h.Owner, queue)
		}
	}
}

// check holds one shared name to its limits.
func (f *referee) check(t *testing.T, step int, key string, in Info) {
	t.Helper()
	s := in.Shared
	switch {
	case len(s.Holders) == 0:
		t.Fatalf("step %d: %s is listed with no holder", step, key)
	case s.Kind == Semaphore && uint32(len(s.Holders)) > s.Limit:
		t.Fatalf("step %d: %s has %d holders, limit %d", step, key, len(s.Holders), s.Limit)
	case len(s.Holders) > f.maxHolders:
		t.Fatalf("step %d: %s has %d holders, over the cap of %d", step, key, len(s.Holders), f.maxHolders)
	case s.Writer && len(s.Holders) > 1:
		t.Fatalf("step %d: %s has a writer beside %d others", step, key, len(s.Holders)-1)
	}
}
