package handoff

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
)

// The protocol's model test: random schedules of requests entering,
// abandoned by their clients, retried beside the abandoned ones, handed
// the key, refused, cancelled; of commits, commit failures, deliveries
// that lag behind the table, clients releasing, and leader changes. The
// requests are real (Requests.Acquire in goroutines), the table is the
// real replicated engine, and the "raft" between them is a world the
// schedule drives one step at a time: a synctest bubble lets each step
// run until every goroutine is blocked again, so a seed replays the same
// interleaving.
//
// A request names one key, or (in some seeds) a set of two, in either
// order, taken all or none: a single key is a set of one. Some seeds make
// the keys semaphores of two, and some write a single key's mutex as
// v0.1.0's acquire entry.
//
// The referee is each client's belief. A client believes it holds a key
// from the moment a request of its owner answers a fence for it until it
// sends its release. The model says what each request may be answered:
//
//   - a fence for a key only if the table holds the key for that owner
//     with that fence as the answer is given, and as long as the client
//     believes it
//     (no clean-up of another request of the owner may release it: the
//     double grant of a retried wait crossing an abandoned one);
//   - "held" only from a proposal the table refused; ErrEnded only once
//     the term has ended; a context error only to an abandoned request.
//
// Once the schedule ends and every request has been abandoned and has
// left, no owner is left queued (the last request cleaned up, or the next
// leader's takeover did), and a grant nobody believes it holds is only one
// whose answer went to a client that had gone, or (with faults) one whose
// clean-up lost its term.

const (
	modelSteps = 400
	modelSeeds = 300
)

var (
	modelOwners = []string{"b", "c", "d"}
	modelKeys   = []string{"k", "j"}
)

func TestModel_RequestsAnswerOnlyWhatTheTableHolds(t *testing.T) {
	for seed := range uint64(modelSeeds) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t, seed)
				defer w.stop()
				for step := range modelSteps {
					synctest.Wait()
					if t.Failed() {
						return
					}
					var sleep time.Duration
					w.locked(func() { w.check(step); sleep = w.act() })
					time.Sleep(sleep) // outside the lock: timers wake requests

				}
				w.drain()
			})
		})
	}
}

// world is the schedule's side: the table, the pending proposals and
// deliveries, the current term, and what each client believes.
type world struct {
	// mu is held by the schedule while it acts and by a request's
	// goroutine while it touches the world; the schedule releases it
	// before waiting for the bubble to block.
	mu     sync.Mutex
	t      *testing.T
	rng    *rand.Rand
	faults bool // this seed fails commits and changes leaders
	sets   bool // this seed's requests may name both keys
	entry1 bool // this seed writes a single key's mutex as v0.1.0's entry
	limit  int  // each key's most holders
	tables modelTables
	index  uint64 // the last "raft index", the fence of a grant

	term    *fakeTerm
	reqs    *Requests // the current leader's record
	pending []*proposal
	// undeliv holds the hand-offs applied and not yet delivered, and the
	// answers to proposals applied after them: raft's FSM answers a
	// proposal only once the hand-offs applied up to it are delivered, so
	// a table read may run ahead of the deliveries, an answer may not.
	undeliv  []applied
	delivery chan struct{} // closed and replaced on each delivery

	clients map[string]*client
	lost    map[engine.Grant]bool // grants answered to a client that had gone
	events  []string              // what happened, for a failure's report
	failed  bool                  // a commit failed or a term ended
}

// client is one owner: its requests at the leader and its belief.
type client struct {
	owner string
	// current is the request the client is waiting on (nil: none); the
	// others it abandoned may still be live at the leader.
	current *modelRequest
	live    []*modelRequest
	holds   []engine.Grant // the grants it believes it holds
}

// believes reports whether c believes it holds g.
func (c *client) believes(g engine.Grant) bool { return slices.Contains(c.holds, g) }

type modelRequest struct {
	id     int
	owner  string
	keys   []string
	wait   time.Duration
	term   *fakeTerm
	ctx    context.Context
	cancel context.CancelFunc
	done   bool
}

type proposal struct {
	e    fsm.Entry
	term *fakeTerm
	done chan proposed
}

type applied struct {
	handoff *engine.Grant // a hand-off to deliver, or
	p       *proposal     // a proposal to answer with out
	out     proposed
}

type proposed struct {
	resp *fsm.Response
	err  error
}

func newWorld(t *testing.T, seed uint64) *world {
	w := &world{
		t:        t,
		rng:      rand.New(rand.NewPCG(seed, 21)),
		faults:   seed%2 == 1,
		delivery: make(chan struct{}),
		clients:  map[string]*client{},
		lost:     map[engine.Grant]bool{},
		sets:     seed%5 >= 3,
		entry1:   seed%7 == 1,
		limit:    1,
		tables:   modelTables{},
	}
	if seed%3 == 2 {
		w.limit = 2 // semaphores: hand-offs to several, several believers
	}
	for _, k := range modelKeys {
		w.tables[k] = &modelTable{limit: w.limit}
	}
	for _, o := range modelOwners {
		w.clients[o] = &client{owner: o}
	}
	w.reqs = NewRequests(nil)
	w.term = w.newTerm()
	return w
}

func (w *world) locked(f func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f()
}

func (w *world) logf(format string, args ...any) {
	w.events = append(w.events, fmt.Sprintf(format, args...))
}

// fail reports a violation with the events that led to it; the schedule
// stops at its next step. It may be called from any goroutine.
func (w *world) fail(format string, args ...any) {
	w.t.Helper()
	tail := w.events[max(0, len(w.events)-40):]
	w.t.Errorf("%s\nlast events:\n  %s", fmt.Sprintf(format, args...), strings.Join(tail, "\n  "))
}

// act takes one random step of the schedule; letting time pass is left
// to the caller, once it has let go of the world.
func (w *world) act() (sleep time.Duration) {
	for {
		switch n := w.rng.IntN(100); {
		case n < 18:
			if w.startRequest() {
				return 0
			}
		case n < 28:
			if w.abandon() {
				return 0
			}
		case n < 55:
			if w.commit() {
				return 0
			}
		case n < 65:
			if w.deliver() {
				return 0
			}
		case n < 75:
			d := time.Duration(100+w.rng.IntN(1500)) * time.Millisecond
			w.logf("time passes %v", d)
			return d
		case n < 85:
			if w.release() {
				return 0
			}
		case n < 90:
			if w.faults && w.failCommit() {
				return 0
			}
		case n < 93:
			if w.faults {
				w.changeLeader()
				return 0
			}
		default:
		}
	}
}

// startRequest has a client send an acquire: a new one, or a retry of
// the one it waits on, which it abandons (as client.Client does after an
// attempt's timeout or on failover).
func (w *world) startRequest() bool {
	c := w.clients[modelOwners[w.rng.IntN(len(modelOwners))]]
	if len(c.holds) != 0 {
		return false
	}
	keys := modelKeys[:1]
	if w.sets {
		keys = [][]string{{"k"}, {"j"}, {"k", "j"}, {"j", "k"}}[w.rng.IntN(4)]
	}
	if c.current != nil {
		w.logf("%s abandons request %d to retry", c.owner, c.current.id)
		c.current.cancel()
	}
	var wait, keep time.Duration
	if w.rng.IntN(4) > 0 {
		wait = time.Duration(1+w.rng.IntN(3)) * time.Second
		if w.rng.IntN(2) == 0 {
			// A chunk of a longer wait: its place outlives it, for the
			// client's next request.
			keep = time.Duration(1+w.rng.IntN(2)) * time.Second
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &modelRequest{id: w.nextID(), owner: c.owner, keys: keys, wait: wait, term: w.term, ctx: ctx, cancel: cancel}
	c.current = r
	c.live = append(c.live, r)
	w.logf("%s sends request %d of %v (wait %v, keep %v) to term %d", c.owner, r.id, keys, wait, keep, w.term.id)
	reqs, term := w.reqs, w.term
	e := fsm.Entry{Op: engine.OpAcquireKeys, Keys: keys, Owner: r.owner, TTL: time.Hour}
	switch {
	case w.limit > 1:
		e.Claim = engine.Claim{Kind: engine.Semaphore, Limit: uint32(w.limit)}
	case w.entry1 && len(keys) == 1:
		e = fsm.Entry{Op: engine.OpAcquire, Key: keys[0], Owner: r.owner, TTL: time.Hour}
	}
	go func() {
		var how Wait
		if wait > 0 {
			how.Until = time.Now().Add(wait)
			how.Keep = keep
		}
		a, err := reqs.Acquire(ctx, term, e, how)
		w.answered(r, a, err)
	}()
	return true
}

var lastID int

func (w *world) nextID() int { lastID++; return lastID }

// answered judges one request's answer against the table, in the
// request's goroutine: the schedule is waiting for it to block.
func (w *world) answered(r *modelRequest, a Answer, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.clients[r.owner]
	gone := r.ctx.Err() != nil
	w.logf("request %d of %s answers %+v, %v (client gone: %v)", r.id, r.owner, a, err, gone)
	r.done = true
	switch {
	case err != nil && errors.Is(err, ErrEnded):
		if r.term.ctx.Err() == nil {
			w.fail("request %d answered ErrEnded in a term that has not ended", r.id)
		}
	case err != nil && r.ctx.Err() != nil && errors.Is(err, r.ctx.Err()):
	case err != nil:
		if !w.failed {
			w.fail("request %d failed (%v) with no commit failure", r.id, err)
		}
	case a.Fences != nil:
		if len(a.Fences) != len(r.keys) {
			w.fail("request %d of %v answered %d fences", r.id, r.keys, len(a.Fences))
			break
		}
		for i, k := range r.keys {
			g := engine.Grant{Key: k, Owner: r.owner, Fence: a.Fences[i]}
			if !w.tables[k].holds(r.owner, g.Fence) {
				w.fail("request %d of %s answered fence %d of %s; the table has %+v", r.id, r.owner, g.Fence, k, w.tables[k].holders)
			}
			switch {
			case gone:
				w.lost[g] = true
			case c.current == r:
				c.holds = append(c.holds, g)
				w.logf("%s believes it holds fence %d of %s", r.owner, g.Fence, k)
			}
		}
	case a.TimedOut:
		if r.wait == 0 {
			w.fail("request %d without wait timed out", r.id)
		}
	default:
		if a.Held.Owner == "" || a.Held.Owner == r.owner {
			w.fail("request %d of %s refused for holder %+v", r.id, r.owner, a.Held)
		}
	}
	if c.current == r {
		c.current = nil
	}
}

// abandon cancels a request's context: its client went away.
func (w *world) abandon() bool {
	c := w.clients[modelOwners[w.rng.IntN(len(modelOwners))]]
	if c.current == nil {
		return false
	}
	w.logf("%s abandons request %d", c.owner, c.current.id)
	c.current.cancel()
	c.current = nil
	return true
}

// release has a client that believes it holds the key release it. It
// waits for nothing it abandoned: the abandoned requests' clean-ups are
// the protocol's to order.
func (w *world) release() bool {
	c := w.clients[modelOwners[w.rng.IntN(len(modelOwners))]]
	if len(c.holds) == 0 {
		return false
	}
	w.logf("%s releases %+v", c.owner, c.holds)
	term := w.term
	for _, g := range c.holds {
		go func() {
			e := fsm.Entry{Op: engine.OpRelease, Key: g.Key, Owner: c.owner, Now: term.Now()}
			_, _ = term.Propose(context.Background(), e)
		}()
	}
	c.holds = nil
	return true
}

// commit applies the oldest pending proposal, as raft commits them in the
// order proposed.
func (w *world) commit() bool {
	if len(w.pending) == 0 {
		return false
	}
	p := w.pending[0]
	w.pending = w.pending[1:]
	resp := w.apply(p.e)
	if len(w.undeliv) == 0 {
		p.done <- proposed{resp: resp}
	} else {
		w.undeliv = append(w.undeliv, applied{p: p, out: proposed{resp: resp}})
	}
	return true
}

// failCommit fails the oldest pending proposal: dropped before raft (not
// applied), or applied with its outcome lost to the proposer.
func (w *world) failCommit() bool {
	if len(w.pending) == 0 {
		return false
	}
	p := w.pending[0]
	w.pending = w.pending[1:]
	w.failed = true
	if w.rng.IntN(2) == 0 {
		w.apply(p.e)
		w.logf("  its outcome is lost")
	} else {
		w.logf("dropped before commit: %v %s", p.e.Op, p.e.Owner)
	}
	p.done <- proposed{err: errors.New("commit failed")}
	return true
}

func (w *world) apply(e fsm.Entry) *fsm.Response {
	w.index++
	cmd := engine.Command{Op: e.Op, Key: e.Key, Keys: e.Keys, Owner: e.Owner, TTL: e.TTL, Now: e.Now, Fence: w.index, Wait: e.Wait, Claim: e.Claim}
	r := w.tables.apply(cmd)
	w.logf("commit %v %s%v %s (wait %v): ok %v queued %v grant %+v grants %v handoff %v",
		e.Op, e.Key, e.Keys, e.Owner, e.Wait, r.OK, r.Queued, r.Grant, r.Grants, r.Handoffs)
	for _, h := range r.Handoffs {
		w.undeliv = append(w.undeliv, applied{handoff: &h})
		if w.rng.IntN(2) == 0 {
			w.deliver() // delivered at once, as the FSM mostly does
		}
	}
	return &fsm.Response{Index: w.index, Result: r}
}

// deliver runs the apply hook for the oldest undelivered hand-off.
func (w *world) deliver() bool {
	if len(w.undeliv) == 0 {
		return false
	}
	one := false // a hand-off delivered: stop at the next
	for i, a := range w.undeliv {
		if a.p != nil {
			a.p.done <- a.out
			continue
		}
		if one {
			w.undeliv = w.undeliv[i:]
			return true
		}
		one = true
		w.logf("deliver %s fence %d of %s", a.handoff.Owner, a.handoff.Fence, a.handoff.Key)
		w.reqs.Deliver(*a.handoff)
		close(w.delivery)
		w.delivery = make(chan struct{})
	}
	w.undeliv = nil
	return true
}

// changeLeader ends the term: its pending proposals fail (some applied,
// their outcome lost), the FSM delivers what it applied, and the next
// leader (this node again, or another with a record of its own) takes
// over by cancelling every queued waiter.
func (w *world) changeLeader() {
	w.logf("leader change after term %d", w.term.id)
	w.failed = true
	for _, p := range w.pending {
		if w.rng.IntN(2) == 0 {
			w.apply(p.e)
		}
		p.done <- proposed{err: fmt.Errorf("%w: leadership lost", ErrEnded)}
	}
	w.pending = nil
	for w.deliver() {
	}
	w.term.end()
	if w.rng.IntN(2) == 0 {
		w.reqs = NewRequests(nil) // another node leads
	}
	w.term = w.newTerm()
	// From the tail, as the node's takeover does (cancelOrder): a cancel
	// at the head would let in waiters about to be cancelled too.
	for _, k := range modelKeys {
		q := slices.Clone(w.tables[k].queue)
		for i := len(q) - 1; i >= 0; i-- {
			w.apply(fsm.Entry{Op: engine.OpCancelWait, Key: k, Owner: q[i]})
		}
	}
}

// check is the referee at a quiet moment: every belief is the table's.
func (w *world) check(step int) {
	for _, o := range modelOwners {
		for _, g := range w.clients[o].holds {
			if !w.tables[g.Key].holds(o, g.Fence) {
				w.fail("step %d: %s believes it holds fence %d of %s; the table has %+v: a double grant", step, o, g.Fence, g.Key, w.tables[g.Key].holders)
			}
		}
	}
}

// drain abandons every request, then commits, delivers and lets time pass
// until every request has left; then nothing may be left queued, and a
// grant nobody believes it holds must be explained.
func (w *world) drain() {
	w.locked(func() {
		for _, c := range w.clients {
			if c.current != nil {
				c.current.cancel()
				c.current = nil
			}
		}
	})
	if !w.settle() {
		w.fail("requests still live after the drain")
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range modelKeys {
		if q := w.tables[k].queue; len(q) != 0 {
			w.fail("after every request left, still queued for %s: %v", k, q)
		}
		for _, g := range w.tables[k].holders {
			if !w.clients[g.Owner].believes(g) && !w.lost[g] && !w.failed {
				w.fail("the table holds %+v for nobody: no client believes it, and no answer was lost", g)
			}
		}
	}
}

// settle commits, delivers and lets time pass until every request has
// left; false if they never do.
func (w *world) settle() bool {
	for range 10_000 {
		synctest.Wait()
		var progress, left bool
		w.locked(func() { progress = w.commit() || w.deliver(); left = !progress && w.allLeft() })
		switch {
		case left:
			return true
		case !progress:
			time.Sleep(time.Second)
		}
	}
	return false
}

// stop ends whatever a failed schedule left running, so the bubble can
// end: the term, every request, and the proposals they wait on.
func (w *world) stop() {
	if !w.t.Failed() {
		return
	}
	w.locked(func() {
		w.term.end()
		for _, c := range w.clients {
			for _, r := range c.live {
				r.cancel()
			}
		}
	})
	w.settle()
}

func (w *world) allLeft() bool {
	for _, c := range w.clients {
		c.live = slices.DeleteFunc(c.live, func(r *modelRequest) bool { return r.done })
		if len(c.live) > 0 {
			return false
		}
	}
	for _, o := range modelOwners {
		for _, k := range modelKeys {
			if live, _ := w.reqs.Live(k, o); live > 0 {
				return false
			}
		}
	}
	return true
}

// fakeTerm is one leadership term as a Port over the world.
type fakeTerm struct {
	w      *world
	id     int
	ctx    context.Context
	cancel context.CancelFunc
}

var _ Port = (*fakeTerm)(nil)

func (w *world) newTerm() *fakeTerm {
	ctx, cancel := context.WithCancel(context.Background())
	id := 1
	if w.term != nil {
		id = w.term.id + 1
	}
	return &fakeTerm{w: w, id: id, ctx: ctx, cancel: cancel}
}

func (f *fakeTerm) end() { f.cancel() }

func (f *fakeTerm) Now() int64 { return time.Now().UnixNano() }

func (f *fakeTerm) Context() context.Context { return f.ctx }

// Propose queues e for the schedule to commit or fail; a term that has
// ended proposes nothing.
func (f *fakeTerm) Propose(_ context.Context, e fsm.Entry) (*fsm.Response, error) {
	f.w.mu.Lock()
	if f.ctx.Err() != nil || f != f.w.term {
		f.w.mu.Unlock()
		return nil, fmt.Errorf("%w: not the leader", ErrEnded)
	}
	p := &proposal{e: e, term: f, done: make(chan proposed, 1)}
	f.w.pending = append(f.w.pending, p)
	f.w.mu.Unlock()
	r := <-p.done
	return r.resp, r.err
}

func (f *fakeTerm) Queued(_ context.Context, key, owner string) (bool, error) {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	return f.w.tables[key].queued(owner), nil
}

// QueuedOnceDelivered waits, when owner is not queued, until every
// hand-off applied so far has been delivered.
func (f *fakeTerm) QueuedOnceDelivered(ctx context.Context, key, owner string) (bool, error) {
	if ok, err := f.Queued(ctx, key, owner); ok || err != nil {
		return ok, err
	}
	f.w.mu.Lock()
	target, delivery := f.w.undelivered(), f.w.delivery
	f.w.mu.Unlock()
	for target > 0 {
		select {
		case <-delivery:
			target--
			f.w.mu.Lock()
			delivery = f.w.delivery
			f.w.mu.Unlock()
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	return false, nil
}

func (w *world) undelivered() int {
	n := 0
	for _, a := range w.undeliv {
		if a.handoff != nil {
			n++
		}
	}
	return n
}
