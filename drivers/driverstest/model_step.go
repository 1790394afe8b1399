package driverstest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// modelRun is one schedule: the backend's processes, the model beside
// them, and what the backend's fences map to.
type modelRun struct {
	t      tb
	f      family
	opt    ModelOptions
	seed   uint64
	rng    *rand.Rand
	procs  []Proc
	alive  []bool
	caps   drivers.Capabilities
	actors []*actor
	keys   []string
	m      *Model
	start  time.Time
	fences map[uint64]uint64 // the model's fence of a grant → the backend's
	top    map[string]uint64 // the highest fence the backend gave a key
	step   int
	kills  int
	log    []string
}

// actor is one owner, in one process, making one call at a time.
type actor struct {
	owner string
	proc  int
	wait  *pending // its wait under way
}

type pending struct {
	req    drivers.Request
	cancel context.CancelFunc
	done   chan waitEnd
}

type waitEnd struct {
	g   drivers.Grant
	err error
}

func (r *modelRun) note(format string, args ...any) {
	r.log = append(r.log, fmt.Sprintf("%3d %s", r.step, fmt.Sprintf(format, args...)))
}

// fail stops the schedule, naming its seed and its last steps.
func (r *modelRun) fail(format string, args ...any) {
	r.t.Helper()
	last := r.log[max(len(r.log)-25, 0):]
	r.t.Fatalf("model schedule %s, seed %d, step %d: %s\nthe last steps:\n%s", r.f.name, r.seed, r.step, fmt.Sprintf(format, args...), strings.Join(last, "\n"))
}

func (r *modelRun) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), r.opt.Within)
}

func (r *modelRun) driver(a *actor) Target { return r.procs[a.proc].Driver }

// advance moves the model to the time elapsed; only grants a step let
// lapse end by it.
func (r *modelRun) advance() { r.expect(r.m.Advance(time.Since(r.start)).Done) }

// next picks and runs one step.
func (r *modelRun) next() {
	for {
		a := r.actors[r.rng.IntN(len(r.actors))]
		if !r.alive[a.proc] {
			continue
		}
		switch n := r.rng.IntN(100); {
		case a.wait != nil && n < 15:
			r.note("%s's wait ends", a.owner)
			r.cancel(a)
		case a.wait != nil:
			if r.releaseOrLapse() {
				return
			}
			continue
		case n < 25:
			r.acquire(a, false)
		case n < 50 && r.caps.Wait:
			r.acquire(a, true)
		case n < 70:
			if !r.release(a) && !r.releaseOrLapse() {
				continue
			}
		case n < 75:
			r.mismatch(a)
		case n < 80:
			r.force()
		case n < 88:
			if !r.race() {
				continue
			}
		case n < 93:
			if !r.kill() {
				continue
			}
		case n < 98 && r.caps.MaxHold:
			if !r.capped(a) {
				continue
			}
		default:
			r.lapse()
		}
		return
	}
}

// request builds an acquire of one key, or of a set for the Sets family;
// a wait never names a key its owner holds.
func (r *modelRun) request(a *actor, wait bool) (drivers.Request, bool) {
	n := 1
	if r.f.sets && (!wait || r.caps.SetWait) {
		n = 1 + r.rng.IntN(3)
	}
	keys := slices.Clone(r.keys)
	r.rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	keys = keys[:n]
	held := r.m.Held(a.owner)
	if wait && n > 1 && slices.ContainsFunc(keys, func(k string) bool { return slices.Contains(held, k) }) {
		return drivers.Request{}, false
	}
	q := drivers.Request{Keys: keys, Owner: a.owner, TTL: long, Claim: r.f.claim(r.rng), Wait: wait}
	if r.caps.MaxHold && r.rng.IntN(3) == 0 {
		q.MaxHold = farCap(r.rng) // kept, never reached: a cap step reaches one
	}
	return q, true
}

func (r *modelRun) acquire(a *actor, wait bool) {
	if q, ok := r.request(a, wait); ok {
		r.send(a, q)
	}
}

// send makes the acquire q of a, and waits for its answer unless the
// model queues it.
func (r *modelRun) send(a *actor, q drivers.Request) {
	wait := q.Wait
	want := r.m.Acquire(q)
	r.note("%s acquires %v as %v, wait %v, cap %v: model %s", a.owner, q.Keys, q.Claim, wait, q.MaxHold, show(want))
	if !wait {
		ctx, cancel := r.ctx()
		g, err := r.driver(a).Acquire(ctx, q)
		cancel()
		r.checkAcquire(q, want, g, err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &pending{req: q, cancel: cancel, done: make(chan waitEnd, 1)}
	d := r.driver(a)
	go func() {
		g, err := d.Acquire(ctx, q)
		p.done <- waitEnd{g, err}
	}()
	a.wait = p
	switch {
	case want.Err != nil || want.Grant.Acquired:
		e := r.awaitEnd(a)
		r.checkAcquire(q, want, e.g, e.err)
	case want.Queued:
		// It shows in the key's queue: settle polls Inspect for it.
	}
}

// checkAcquire compares an acquire's answer with the model's.
func (r *modelRun) checkAcquire(q drivers.Request, want Outcome, g drivers.Grant, err error) {
	r.t.Helper()
	switch {
	case want.Err != nil:
		if !errors.Is(err, drivers.ErrInvalid) {
			r.fail("acquire %v by %s: got %+v, %v; the model refuses it: %v", q.Keys, q.Owner, g, err, want.Err)
		}
	case err != nil:
		r.fail("acquire %v by %s: %v; the model answers %s", q.Keys, q.Owner, err, show(want))
	case g.Acquired != want.Grant.Acquired:
		r.fail("acquire %v by %s as %v: acquired %v (busy %+v); the model: %s", q.Keys, q.Owner, q.Claim, g.Acquired, g.Busy, show(want))
	case g.Acquired:
		r.checkFences(q.Keys, want.Grant.Fences, g.Fences)
	default:
		if g.Busy.Key != "" && g.Busy.Key != want.Grant.Busy.Key {
			r.fail("acquire %v by %s: busy %q; the model's first key in the way is %q", q.Keys, q.Owner, g.Busy.Key, want.Grant.Busy.Key)
		}
		if h, _ := r.m.Holding(want.Grant.Busy.Key); g.Busy.Holder != "" && !slices.ContainsFunc(h.Holders, func(x drivers.Holder) bool { return x.Owner == g.Busy.Holder }) {
			r.fail("acquire %v by %s: told of holder %q, who holds nothing of %q in the model", q.Keys, q.Owner, g.Busy.Holder, want.Grant.Busy.Key)
		}
	}
}

// checkFences maps a grant's fences to the model's: a refresh keeps its
// fence, a new grant's is above every fence the key had.
func (r *modelRun) checkFences(keys []string, model, got []uint64) {
	r.t.Helper()
	if len(got) != len(keys) {
		r.fail("grant of %v: fences %v, want one per key", keys, got)
	}
	for i, k := range keys {
		if got[i] == 0 {
			continue // no fencing
		}
		if f, ok := r.fences[model[i]]; ok {
			if f != got[i] {
				r.fail("%q: fence %d after a refresh, was %d", k, got[i], f)
			}
			continue
		}
		if got[i] <= r.top[k] {
			r.fail("%q: new grant's fence %d is not above %d, the key's last", k, got[i], r.top[k])
		}
		r.fences[model[i]], r.top[k] = got[i], got[i]
	}
}

// holders are the (key, owner) grants a step may end, not a set's wait's.
func (r *modelRun) holders() [][2]string {
	var out [][2]string
	for _, k := range r.keys {
		h, _ := r.m.Holding(k)
		for _, x := range h.Holders {
			if a := r.actor(x.Owner); r.alive[a.proc] && (a.wait == nil || !slices.Contains(a.wait.req.Keys, k)) {
				out = append(out, [2]string{k, x.Owner})
			}
		}
	}
	return out
}

func (r *modelRun) actor(owner string) *actor {
	for _, a := range r.actors {
		if a.owner == owner {
			return a
		}
	}
	return nil
}

// release releases one of a's keys, or one it does not hold.
func (r *modelRun) release(a *actor) bool {
	held := r.m.Held(a.owner)
	key := r.keys[r.rng.IntN(len(r.keys))]
	if len(held) > 0 && r.rng.IntN(4) > 0 {
		key = held[r.rng.IntN(len(held))]
	}
	if a.wait != nil && slices.Contains(a.wait.req.Keys, key) {
		return false
	}
	want := r.m.Release(key, a.owner)
	r.note("%s releases %q: model %s", a.owner, key, show(want))
	ctx, cancel := r.ctx()
	defer cancel()
	ok, err := r.driver(a).Release(ctx, key, a.owner)
	if err != nil || ok != want.OK {
		r.fail("release %q by %s: %v, %v; the model: %v", key, a.owner, ok, err, want.OK)
	}
	r.expect(want.Done)
	return true
}

// releaseOrLapse releases, refreshes or lets lapse a grant of any actor.
func (r *modelRun) releaseOrLapse() bool {
	hs := r.holders()
	if len(hs) == 0 {
		return false
	}
	h := hs[r.rng.IntN(len(hs))]
	a := r.actor(h[1])
	switch r.rng.IntN(3) {
	case 0:
		want := r.m.Extend(h[0], a.owner, long)
		r.note("%s refreshes %q: model %s", a.owner, h[0], show(want))
		ctx, cancel := r.ctx()
		defer cancel()
		if ok, err := r.driver(a).Extend(ctx, h[0], a.owner, long); err != nil || ok != want.OK {
			r.fail("extend %q by %s: %v, %v; the model: %v", h[0], a.owner, ok, err, want.OK)
		}
		return true
	case 1:
		return r.release(a)
	}
	r.lapseOf(h[0], a)
	return true
}

// lapse lets one grant run out.
func (r *modelRun) lapse() {
	if hs := r.holders(); len(hs) > 0 {
		h := hs[r.rng.IntN(len(hs))]
		r.lapseOf(h[0], r.actor(h[1]))
	}
}

// lapseOf shortens a's grant of key to Lapse and waits until it has run
// out, then moves the model past it.
func (r *modelRun) lapseOf(key string, a *actor) {
	r.note("%s's grant of %q lapses", a.owner, key)
	r.m.Extend(key, a.owner, r.opt.Lapse)
	ctx, cancel := r.ctx()
	defer cancel()
	if ok, err := r.driver(a).Extend(ctx, key, a.owner, r.opt.Lapse); err != nil || !ok {
		r.fail("extend %q by %s to %v: %v, %v; the model holds it", key, a.owner, r.opt.Lapse, ok, err)
	}
	r.until(time.Now().Add(r.opt.Lapse + 10*time.Millisecond))
}

// until waits for the wall clock to pass at, then moves the model there.
func (r *modelRun) until(at time.Time) {
	time.Sleep(time.Until(at)) // a TTL's run, not a synchronisation: settle polls for its effect
	r.advance()
}

// mismatch asks for one of a's family's held keys with a claim it
// refuses.
func (r *modelRun) mismatch(a *actor) {
	keys := r.m.Keys()
	if len(keys) == 0 || a.wait != nil {
		return
	}
	q := drivers.Request{Keys: []string{keys[r.rng.IntN(len(keys))]}, Owner: a.owner, TTL: long, Claim: r.f.other}
	want := r.m.Acquire(q)
	r.note("%s acquires %v as %v: model %s", a.owner, q.Keys, q.Claim, show(want))
	ctx, cancel := r.ctx()
	defer cancel()
	g, err := r.driver(a).Acquire(ctx, q)
	r.checkAcquire(q, want, g, err)
}

// force force-releases a key that no set's wait holds.
func (r *modelRun) force() {
	key := r.keys[r.rng.IntN(len(r.keys))]
	h, _ := r.m.Holding(key)
	for _, x := range h.Holders {
		if a := r.actor(x.Owner); a.wait != nil || !r.alive[a.proc] {
			return
		}
	}
	want := r.m.ForceRelease(key)
	r.note("force release of %q: model %s", key, show(want))
	ctx, cancel := r.ctx()
	defer cancel()
	if err := r.aliveProc().Driver.ForceRelease(ctx, key); err != nil {
		r.fail("force release %q: %v", key, err)
	}
	r.expect(want.Done)
}

func (r *modelRun) aliveProc() Proc {
	for i, p := range r.procs {
		if r.alive[i] {
			return p
		}
	}
	return r.procs[0]
}

// cancel ends a's wait, as its ctx's deadline would.
func (r *modelRun) cancel(a *actor) {
	want := r.m.Cancel(a.owner)
	a.wait.cancel()
	e := r.awaitEnd(a)
	if e.err == nil || !errors.Is(e.err, context.Canceled) {
		r.fail("%s's wait, ended: %+v, %v; the model has it waiting still", a.owner, e.g, e.err)
	}
	r.expect(want.Done)
}

// race releases a key while the wait at the head of its queue ends: the
// model allows both orders, and the wait's answer says which it was.
func (r *modelRun) race() bool {
	for _, h := range r.holders() {
		m, _ := r.m.Holding(h[0])
		if len(m.Waiters) == 0 || len(m.Holders) != 1 {
			continue
		}
		w := r.actor(m.Waiters[0].Owner)
		if len(w.wait.req.Keys) != 1 {
			continue
		}
		a := r.actor(h[1])
		r.note("%s releases %q as %s's wait for it ends", a.owner, h[0], w.owner)
		branches := r.m.RaceCancel(w.owner, func(m *Model) Outcome { return m.Release(h[0], a.owner) })
		go w.wait.cancel()
		ctx, cancel := r.ctx()
		ok, err := r.driver(a).Release(ctx, h[0], a.owner)
		cancel()
		if err != nil || !ok {
			r.fail("release %q by %s: %v, %v; the model: true", h[0], a.owner, ok, err)
		}
		req := w.wait.req
		e := r.awaitEnd(w)
		for _, b := range branches {
			granted := slices.ContainsFunc(b.Outcome.Done, func(d Done) bool { return d.Owner == w.owner && d.Err == nil })
			if granted != (e.err == nil) {
				continue
			}
			r.note("  %s's wait: granted %v", w.owner, granted)
			r.m = b.Model
			var rest []Done
			for _, d := range b.Outcome.Done {
				if d.Owner == w.owner {
					if granted {
						r.checkFences(req.Keys, d.Fences, e.g.Fences)
					}
					continue
				}
				rest = append(rest, d)
			}
			r.expect(rest)
			return true
		}
		r.fail("%s's wait ended %+v, %v: neither order allows it", w.owner, e.g, e.err)
	}
	return false
}

// kill SIGKILLs a process with a wait under way: its waits end now, its
// grants (a set's wait's keys among them) at their TTL, shortened first
// so as to end after its places.
func (r *modelRun) kill() bool {
	if r.kills > 0 {
		return false
	}
	alive := 0
	for _, ok := range r.alive {
		if ok {
			alive++
		}
	}
	var victim = -1
	for _, a := range r.actors {
		if a.wait != nil && r.alive[a.proc] && r.procs[a.proc].Kill != nil {
			victim = a.proc
		}
	}
	if victim < 0 || alive <= 2 {
		return false
	}
	r.kills++
	ttl := r.opt.PlaceLapse + 2*time.Second
	var owners []string
	ctx, cancel := r.ctx()
	defer cancel()
	for _, a := range r.actors {
		if a.proc != victim {
			continue
		}
		owners = append(owners, a.owner)
		for _, k := range r.m.Held(a.owner) {
			r.m.Extend(k, a.owner, ttl) // a set's wait's keys too: they lapse, as its grants
			if ok, err := r.driver(a).Extend(ctx, k, a.owner, ttl); err != nil || !ok {
				r.fail("extend %q by %s: %v, %v; the model holds it", k, a.owner, ok, err)
			}
		}
	}
	lapsed := time.Now().Add(ttl + 10*time.Millisecond)
	r.note("%s (owners %v) is killed mid-wait", r.procs[victim].Name, owners)
	r.procs[victim].Kill()
	r.alive[victim] = false
	for _, a := range r.actors {
		if a.proc == victim && a.wait != nil {
			<-a.wait.done // the process is gone: its call fails
			a.wait = nil
		}
	}
	r.expect(r.m.Kill(owners...).Done)
	r.until(lapsed)
	return true
}

// awaitEnd returns the end of a's wait, failing when it does not come.
func (r *modelRun) awaitEnd(a *actor) waitEnd {
	r.t.Helper()
	select {
	case e := <-a.wait.done:
		a.wait = nil
		return e
	case <-time.After(r.opt.Within):
		r.fail("%s's wait did not end within %v", a.owner, r.opt.Within)
	}
	return waitEnd{}
}

// expect waits for the waits the model ended, and checks their answers.
func (r *modelRun) expect(done []Done) {
	r.t.Helper()
	for _, d := range done {
		a := r.actor(d.Owner)
		if a.wait == nil {
			continue // ended already: a wait the model granted as it came
		}
		q := a.wait.req
		e := r.awaitEnd(a)
		r.note("  %s's wait ends: %v, %v", d.Owner, e.g.Fences, e.err)
		switch {
		case d.Err != nil && e.err == nil:
			r.fail("%s's wait was granted %v; the model breaks it: %v", d.Owner, e.g.Fences, d.Err)
		case d.Err != nil:
		case e.err != nil || !e.g.Acquired:
			r.fail("%s's wait for %v: %+v, %v; the model grants it", d.Owner, q.Keys, e.g, e.err)
		default:
			r.checkFences(q.Keys, d.Fences, e.g.Fences)
		}
	}
}

// settle checks that no wait ended that the model keeps waiting, then
// polls every key until Inspect describes it as the model does.
func (r *modelRun) settle() {
	r.t.Helper()
	for _, a := range r.actors {
		if a.wait == nil || !r.alive[a.proc] {
			continue
		}
		select {
		case e := <-a.wait.done:
			r.fail("%s's wait for %v ended (%+v, %v); the model keeps it waiting", a.owner, a.wait.req.Keys, e.g, e.err)
		default:
		}
	}
	d := r.aliveProc().Driver
	for _, k := range r.keys {
		var diff string
		if !poll.Wait(r.opt.Within, func() bool { diff = r.compare(d, k); return diff == "" }) {
			r.fail("%q never matched the model within %v: %s", k, r.opt.Within, diff)
		}
	}
}

// compare describes how the backend's view of key differs from the
// model's; "" when it does not.
func (r *modelRun) compare(d Target, key string) string {
	ctx, cancel := r.ctx()
	defer cancel()
	got, ok, err := d.Inspect(ctx, key)
	if err != nil {
		return "inspect: " + err.Error()
	}
	want, wok := r.m.Holding(key)
	if !ok && !wok {
		return ""
	}
	// A grant not yet reported (a set's wait still waits) has a fence
	// to learn when it is; any will do until then.
	unknown := map[string]bool{}
	mapped := make([]string, len(want.Holders))
	for i, h := range want.Holders {
		f, ok := r.fences[h.Fence]
		unknown[h.Owner] = !ok
		mapped[i] = fmt.Sprintf("%s/%v/%d", h.Owner, h.Write, f)
	}
	seen := make([]string, len(got.Holders))
	for i, h := range got.Holders {
		if unknown[h.Owner] {
			h.Fence = 0
		}
		seen[i] = fmt.Sprintf("%s/%v/%d", h.Owner, h.Write, h.Fence)
	}
	slices.Sort(mapped)
	slices.Sort(seen)
	describe := func() string {
		return fmt.Sprintf("backend: held %v as %v by %v, waiters %v (count %d); model: held %v as %v by %v, waiters %v",
			ok, got.Claim, seen, got.Waiters, got.WaiterCount, wok, want.Claim, mapped, want.Waiters)
	}
	switch {
	case ok != wok || !slices.Equal(seen, mapped):
		return describe()
	case want.Claim.Kind != drivers.Mutex && got.Claim != want.Claim:
		return describe()
	case len(got.Waiters) > 0 && !slices.Equal(got.Waiters, want.Waiters):
		return describe()
	case len(got.Waiters) == 0 && got.WaiterCount != want.WaiterCount:
		return describe()
	}
	return ""
}

// show is an Outcome in a few words.
func show(o Outcome) string {
	var s string
	switch {
	case o.Err != nil:
		s = "refused: " + o.Err.Error()
	case o.Queued:
		s = "queued behind " + o.Grant.Busy.Key
	case o.Grant.Acquired:
		s = fmt.Sprintf("granted %v", o.Grant.Fences)
	case o.Grant.Busy.Key != "":
		s = fmt.Sprintf("busy %s (%s)", o.Grant.Busy.Key, o.Grant.Busy.Holder)
	default:
		s = fmt.Sprint(o.OK)
	}
	for _, d := range o.Done {
		s += fmt.Sprintf("; %s's wait ends %v %v", d.Owner, d.Fences, d.Err)
	}
	return s
}
