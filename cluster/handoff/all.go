package handoff

import (
	"context"
	"reflect"
	"time"

	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
)

// AllAnswer is what an acquire-all request found.
type AllAnswer struct {
	// Fences are the grants returned to the client, in the order of the
	// keys; nil when not acquired.
	Fences []uint64
	// Held, when refused: the grant in the way (Held.Key names its key),
	// at Now, the stamp of the proposal that found it.
	Held engine.Grant
	Now  int64
	// TimedOut: the wait ran out while Waiting was still waited for.
	TimedOut bool
	Waiting  string
}

// AcquireAll serves one acquire-all request, e (an engine.OpAcquireAll
// of e.Keys by e.Owner with e.TTL; the protocol sets Now and Wait), on
// the term p. Without wait it takes every key or none. With wait, one
// entry takes the free keys and queues the owner for the busy ones (FIFO
// for the whole set, see engine.AcquireAllWait), and the request waits
// for their hand-offs, keeping the keys it holds alive meanwhile (one
// entry a tick, see keepAlive); once it has them all, one more entry
// refreshes every key, so their TTLs count from the answer.
//
// The request is a live request of (key, owner) for every key, so the
// protocol's rules hold for each: the owner's last live request to leave
// cancels the queue entries left and releases the grants no request
// returned, among them the keys taken at once while others were waited
// for, which are recorded as delivered.
//
// It waits as w says, as Acquire does, with one difference: a wait that
// ran out with no place to keep (w.Keep zero) is answered after its
// clean-ups, since the request holds the keys it took at once and a 409
// says the set holds none of them. The keys' clean-ups run side by side,
// so that costs a commit or two, however many keys. With w.Keep, the
// keys taken and the places in the queues are kept for the owner's next
// request, and left after the answer.
func (r *Requests) AcquireAll(ctx context.Context, p Port, e fsm.Entry, w Wait) (a AllAnswer, err error) {
	qs := make([]*request, len(e.Keys))
	for i, k := range e.Keys {
		qs[i] = r.enter(k, e.Owner)
	}
	defer func() { r.leaveAll(p, qs, a, w) }()
	for _, q := range qs {
		if err := r.settle(ctx, p.Context().Done(), q); err != nil {
			return AllAnswer{}, err
		}
	}
	if w.Until.IsZero() {
		return acquireAllNow(ctx, p, e)
	}
	return r.acquireAllWait(ctx, p, qs, e, w.Until)
}

// leaveAll ends the request of every key, answered a: after a wait that
// ran out with a place to keep, later, the set's places kept as one;
// otherwise now, waiting for the clean-ups, which run side by side.
func (r *Requests) leaveAll(p Port, qs []*request, a AllAnswer, w Wait) {
	if a.TimedOut && w.Keep > 0 {
		r.leaveLater(p, qs, w)
		return
	}
	r.leaveEach(p, qs, a.Fences)
}

func acquireAllNow(ctx context.Context, p Port, e fsm.Entry) (AllAnswer, error) {
	a, _, err := proposeAll(ctx, p, e, false)
	return a, err
}

// proposeAll proposes e, stamped now, waiting or not, and reads the
// answer: every fence, or the grant in the way, or (queued) the grants
// made at once while the others are waited for, a zero Grant for each of
// those.
func proposeAll(ctx context.Context, p Port, e fsm.Entry, wait bool) (a AllAnswer, queued []engine.Grant, err error) {
	e.Now, e.Wait = p.Now(), wait
	resp, err := p.Propose(ctx, e)
	switch {
	case err != nil:
		return AllAnswer{}, nil, err
	case resp.Result.Err != nil:
		return AllAnswer{}, nil, resp.Result.Err
	case resp.Result.OK:
		return AllAnswer{Fences: fencesOf(resp.Result.Grants)}, nil, nil
	case resp.Result.Queued:
		return AllAnswer{}, resp.Result.Grants, nil
	}
	return AllAnswer{Held: resp.Result.Grant, Now: e.Now}, nil, nil
}

func fencesOf(grants []engine.Grant) []uint64 {
	fences := make([]uint64, len(grants))
	for i, g := range grants {
		fences[i] = g.Fence
	}
	return fences
}

// acquireAllWait queues the request for the busy keys and waits for them.
// A retry of a request already queued (for some key) only waits again:
// the keys it is not queued for are the owner's already, and the final
// refresh finds out if one is not.
func (r *Requests) acquireAllWait(ctx context.Context, p Port, qs []*request, e fsm.Entry, until time.Time) (AllAnswer, error) {
	chans := make([]<-chan engine.Grant, len(qs))
	for i, q := range qs {
		chans[i] = r.listen(q)
	}
	pending := make([]bool, len(qs))
	retry := false
	for i, k := range e.Keys {
		queued, err := p.Queued(ctx, k, e.Owner)
		if err != nil {
			return AllAnswer{}, err
		}
		pending[i], retry = queued, retry || queued
	}
	lease := keepAliveLease(e.TTL)
	if !retry {
		// The keys taken now, and those handed over later, are held for
		// the lease until the last comes: the keep-alive renews it.
		queue := e
		queue.TTL = lease
		a, grants, err := proposeAll(ctx, p, queue, true)
		if err != nil || grants == nil {
			return a, err
		}
		for i, g := range grants {
			if g.Fence == 0 {
				pending[i] = true
				continue
			}
			// Taken at once while the others are waited for: released by
			// the clean-up unless this request returns it.
			r.Deliver(g)
		}
	}

	timer := time.NewTimer(time.Until(until))
	defer timer.Stop()
	keep := time.NewTicker(lease / 3)
	defer keep.Stop()
	// The cases: one per key still waited for, then the fixed ones.
	const fixed = 4
	for {
		cases := []reflect.SelectCase{
			{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
			{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(p.Context().Done())},
			{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.C)},
			{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(keep.C)},
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
		chosen, _, _ := reflect.Select(cases)
		switch chosen {
		case 0:
			return AllAnswer{}, ctx.Err() // the client went away: leave releases what it holds
		case 1:
			return AllAnswer{}, ErrEnded
		case 2:
			if err := ctx.Err(); err != nil {
				return AllAnswer{}, err
			}
			return AllAnswer{TimedOut: true, Waiting: e.Keys[index[0]]}, nil
		case 3:
			if a, err := keepAlive(ctx, p, e, pending, lease); err != nil || a != nil {
				return deref(a), err
			}
		default:
			pending[index[chosen-fixed]] = false
		}
	}
	if err := ctx.Err(); err != nil {
		return AllAnswer{}, err
	}
	// Every key is the owner's: one entry refreshes them all, so every
	// TTL counts from now, and answers every fence.
	return acquireAllNow(ctx, p, e)
}

// MinKeepAliveLease is the shortest lease a waiting acquire-all holds
// the keys it has taken for: it renews them every third of it, so a short
// TTL does not make it propose entries every few milliseconds (a 30 ms TTL
// once made it 10 ms). Those keys are not the client's until the last one
// comes, so holding them longer than the TTL costs only this: when the
// leader is lost meanwhile, they stay taken for up to the lease.
const MinKeepAliveLease = time.Second

// keepAliveLease is the lease a waiting acquire-all of TTL ttl holds its
// keys for while it waits: the TTL, and at least MinKeepAliveLease.
func keepAliveLease(ttl time.Duration) time.Duration { return max(ttl, MinKeepAliveLease) }

// keepAlive renews the lease of the keys the owner holds while it waits
// for the others, all in one entry, however many: an acquire-all of those
// keys without wait, the entry that refreshes the whole set once the last
// is handed over. It refreshes a key the owner holds (its fence kept), and
// takes again one forced free that nobody took since, as the final
// refresh would; a key another owner holds since ends the request as a
// refusal naming that key.
func keepAlive(ctx context.Context, p Port, e fsm.Entry, pending []bool, lease time.Duration) (*AllAnswer, error) {
	var held []string
	for i, k := range e.Keys {
		if !pending[i] {
			held = append(held, k)
		}
	}
	if len(held) == 0 {
		return nil, nil
	}
	a, _, err := proposeAll(ctx, p, fsm.Entry{Op: engine.OpAcquireAll, Keys: held, Owner: e.Owner, TTL: lease}, false)
	if err != nil || a.Fences != nil {
		return nil, err
	}
	return &a, nil
}

func deref(a *AllAnswer) AllAnswer {
	if a == nil {
		return AllAnswer{}
	}
	return *a
}
