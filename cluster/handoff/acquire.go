package handoff

import (
	"context"
	"reflect"
	"time"

	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
)

// Wait is how a request waits for its key.
type Wait struct {
	// Until is when the wait runs out; zero: the request does not wait.
	// It is a point in time, not a duration, so that the wait counts
	// from the request's arrival: a client asks for a wait a margin short
	// of its own deadline and expects the answer within that margin,
	// which the commits before the wait (a settle, the queueing) must not
	// use up.
	Until time.Time
	// Keep is how long the request's place in the queue outlives a wait
	// that ran out, for the owner's next request: a client that waits in
	// chunks sends the next one at once, and it should find its place,
	// not join the queue again at its end. Zero: the place is given up
	// at once.
	Keep time.Duration
	// Tenant is who the request came from (its credential): the places
	// kept are counted by tenant, so that one cannot take another's (see
	// MaxKept).
	Tenant string
}

// Answer is what an acquire request found.
type Answer struct {
	// Fences are the grants returned to the client, in the order of the
	// request's keys; nil when not acquired.
	Fences []uint64
	// Held, when refused: the grant in the way (Held.Key names its key)
	// as the proposal found it (its Deadline), at Now, the stamp of that
	// proposal.
	Held engine.Grant
	Now  int64
	// TimedOut: the wait ran out while Waiting was still waited for.
	TimedOut bool
	Waiting  string
}

// Fence is the fence of the request's first key (its one key); 0 when
// not acquired.
func (a Answer) Fence() uint64 {
	if len(a.Fences) == 0 {
		return 0
	}
	return a.Fences[0]
}

// Acquire serves one acquire request, e (an acquire entry of its keys by
// e.Owner with e.TTL and e.Claim; the protocol sets Now and Wait), on the
// term p, as a live request of (key, owner) for every key, so that the
// protocol's rules hold for each: a single key is a set of one. ctx is the
// request's: it ends when the client goes away or the node shuts down.
//
// Without a wait it takes every key or none. With one, a single entry
// takes the free keys and queues the owner for the busy ones (FIFO for
// the whole set), and the request waits for their hand-offs as w says. A
// set keeps the keys it holds alive meanwhile (one entry a tick, see
// keepAlive), and once it has them all, one more entry refreshes every
// key, so their TTLs count from the answer, and so do their caps (the
// table gives the keys a waiting set takes, or is handed, none until
// then). The owner's last live request to leave cancels the queue entries
// left and releases the grants no request returned, among them the keys
// taken at once while others were waited for, which are recorded as
// delivered.
//
// A wait that ran out is answered at once: its clean-up (see leave), and
// the time its places are kept, come after the answer. But a set's with
// no place to keep (w.Keep zero) is answered after its clean-ups, since
// the request holds the keys it took at once and a 409 says it holds none
// of them; the keys' clean-ups run side by side, so that costs a commit or
// two, however many keys.
//
// Errors: ErrEnded when the term ended, ctx's error when the client went
// away (nobody will read the answer), or Propose's error. A refusal is an
// Answer without Fences, never an error.
func (r *Requests) Acquire(ctx context.Context, p Port, e fsm.Entry, w Wait) (a Answer, err error) {
	keys := e.AcquireKeys()
	qs := make([]*request, len(keys))
	for i, k := range keys {
		qs[i] = r.enter(k, e.Owner)
	}
	defer func() {
		if a.TimedOut && (w.Keep > 0 || len(qs) == 1) {
			r.leaveLater(p, qs, w)
			return
		}
		r.leaveEach(p, qs, a.Fences)
	}()
	for _, q := range qs {
		if err := r.settle(ctx, p.Context().Done(), q); err != nil {
			return Answer{}, err
		}
	}
	if w.Until.IsZero() {
		a, _, _, err := propose(ctx, p, e, false)
		return a, err
	}
	return r.acquireWait(ctx, p, qs, e, w.Until)
}

// propose proposes the acquire e, stamped now, waiting or not, and reads
// the answer: every fence, or the grant in the way, or (queued) the
// grants made at once while the others are waited for, a zero Grant for
// each of those.
func propose(ctx context.Context, p Port, e fsm.Entry, wait bool) (a Answer, queued bool, taken []engine.Grant, err error) {
	e.Now, e.Wait = p.Now(), wait
	resp, err := p.Propose(ctx, e)
	switch {
	case err != nil:
		return Answer{}, false, nil, err
	case resp.Result.Err != nil:
		return Answer{}, false, nil, resp.Result.Err
	case resp.Result.OK:
		return Answer{Fences: fencesOf(resp.Result)}, false, nil, nil
	case resp.Result.Queued:
		return Answer{}, true, resp.Result.Grants, nil
	}
	return Answer{Held: resp.Result.Grant, Now: e.Now}, false, nil, nil
}

// fencesOf is the fences of a granted acquire, a fence per key.
func fencesOf(res engine.Result) []uint64 {
	fences := make([]uint64, len(res.Grants))
	for i, g := range res.Grants {
		fences[i] = g.Fence
	}
	return fences
}

// acquireWait queues the request in the replicated table for the busy
// keys and waits for their hand-offs. On timeout or client cancellation
// it just returns: the owner's last live request for each key removes the
// queue entry when it leaves (and releases a grant that raced with that).
//
// A retry of a request already queued (after a client timeout, say; for
// some key of a set) just waits again: the queue entry is committed, a
// hand-off from now on reaches the channels listened to first, and the
// entry cannot be cancelled while this request lives. Its TTL stays the
// one first asked for; the keys of a set it is not queued for are the
// owner's already, and the final refresh finds out if one is not. The
// table's answer is enough here, without leave's wait for deliveries
// (which would hold every waiting acquire behind the batch being
// applied): if the table already handed the owner a key, the acquire
// proposed below is a refresh of that grant.
func (r *Requests) acquireWait(ctx context.Context, p Port, qs []*request, e fsm.Entry, until time.Time) (Answer, error) {
	keys := e.AcquireKeys()
	chans := make([]<-chan engine.Grant, len(qs))
	for i, q := range qs {
		chans[i] = r.listen(q)
	}
	pending := make([]bool, len(qs))
	fences := make([]uint64, len(qs))
	retry := false
	for i, k := range keys {
		queued, err := p.Queued(ctx, k, e.Owner)
		if err != nil {
			return Answer{}, err
		}
		pending[i], retry = queued, retry || queued
	}
	// A set holds the keys taken now, and those handed over later, for
	// the lease until the last comes: the keep-alive renews it. One key
	// holds nothing while it waits.
	lease := e.TTL
	var keep <-chan time.Time
	if len(keys) > 1 {
		lease = keepAliveLease(e.TTL)
		t := time.NewTicker(lease / 3)
		defer t.Stop()
		keep = t.C
	}
	if !retry {
		queue := e
		queue.TTL = lease
		a, queued, taken, err := propose(ctx, p, queue, true)
		if err != nil || !queued {
			return a, err
		}
		for i := range keys {
			if i >= len(taken) || taken[i].Fence == 0 {
				pending[i] = true
				continue
			}
			// Taken at once while the others are waited for: released by
			// the clean-up unless this request returns it.
			r.Deliver(taken[i])
		}
	}

	timer := time.NewTimer(time.Until(until))
	defer timer.Stop()
	// The cases: the fixed ones, then one per key still waited for.
	const fixed = 4
	for {
		cases := []reflect.SelectCase{
			{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
			{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(p.Context().Done())},
			{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.C)},
			{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(keep)},
		}
		index := []int{}
		for i, ch := range chans {
			if pending[i] {
				cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
				index = append(index, i)
			}
		}
		if len(index) == 0 {
			break
		}
		chosen, got, _ := reflect.Select(cases)
		switch chosen {
		case 0:
			return Answer{}, ctx.Err() // the client went away: leave releases what it holds
		case 1:
			return Answer{}, ErrEnded
		case 2:
			if err := ctx.Err(); err != nil {
				return Answer{}, err // the client went away, or the node is stopping
			}
			return Answer{TimedOut: true, Waiting: keys[index[0]]}, nil
		case 3:
			if a, err := keepAlive(ctx, p, e, pending, lease); err != nil || a != nil {
				return deref(a), err
			}
		default:
			i := index[chosen-fixed]
			pending[i], fences[i] = false, got.Interface().(engine.Grant).Fence
		}
	}
	if err := ctx.Err(); err != nil {
		// The client went away as the last key came: nobody will get this
		// answer, so it is not returned, and leave releases the grants
		// (unreturned) rather than leave them blocking the keys for a TTL.
		return Answer{}, err
	}
	if len(keys) == 1 {
		return Answer{Fences: fences}, nil // handed over with the TTL asked
	}
	// Every key is the owner's: one entry refreshes them all, so every
	// TTL counts from now, and answers every fence.
	a, _, _, err := propose(ctx, p, e, false)
	return a, err
}

// MinKeepAliveLease is the shortest lease a waiting set holds the keys it
// has taken for: it renews them every third of it, so a short TTL does
// not make it propose entries every few milliseconds (a 30 ms TTL once
// made it 10 ms). Those keys are not the client's until the last one
// comes, so holding them longer than the TTL costs only this: when the
// leader is lost meanwhile, they stay taken for up to the lease.
const MinKeepAliveLease = time.Second

// keepAliveLease is the lease a waiting set of TTL ttl holds its keys for
// while it waits: the TTL, and at least MinKeepAliveLease.
func keepAliveLease(ttl time.Duration) time.Duration { return max(ttl, MinKeepAliveLease) }

// keepAlive renews the lease of the keys the owner holds while it waits
// for the others, all in one entry, however many: the request's acquire
// of those keys without wait, as the entry that refreshes the whole set
// once the last is handed over. It refreshes a key the owner holds (its
// fence kept), and takes again one forced free that nobody took since, as
// the final refresh would; a key another owner holds since ends the
// request as a refusal naming that key. A set's cap starts when it has
// every key, with the final refresh, which carries the cap asked: this
// entry carries engine.CapPending instead, which leaves the caps of the
// keys it took pending, and makes that of a key it takes again so.
func keepAlive(ctx context.Context, p Port, e fsm.Entry, pending []bool, lease time.Duration) (*Answer, error) {
	var held []string
	for i, k := range e.AcquireKeys() {
		if !pending[i] {
			held = append(held, k)
		}
	}
	if len(held) == 0 {
		return nil, nil
	}
	e.Keys, e.TTL = held, lease
	if e.MaxHold > 0 {
		e.MaxHold = engine.CapPending
	}
	a, _, _, err := propose(ctx, p, e, false)
	if err != nil || a.Fences != nil {
		return nil, err
	}
	return &a, nil
}

func deref(a *Answer) Answer {
	if a == nil {
		return Answer{}
	}
	return *a
}
