package cluster

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/zerotal/lock/cluster/access"
	"github.com/zerotal/lock/cluster/handoff"
	"github.com/zerotal/lock/cluster/httpapi"
	"github.com/zerotal/lock/cluster/rounds"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
)

// The lock operations a leader serves, with plain arguments already
// checked by the API (package httpapi) and drivers-typed errors; apistore.go
// hands them to the API.

// applyErr turns a proposal error into an API error: raft's "no leader
// here" family becomes unavailable; engine errors (full, invalid) stay.
func applyErr(op string, err error) error {
	if rounds.Unavailable(err) {
		return unavailable(op, err)
	}
	return err
}

// waitFrom is the wait of a request that arrived at start: until w.For
// (capped at Config.MaxWait) has passed since, keeping its place w.Keep
// should that run out, counted among the places its tenant keeps.
func (n *Node) waitFrom(start time.Time, w httpapi.Wait) handoff.Wait {
	if w.For <= 0 {
		return handoff.Wait{}
	}
	return handoff.Wait{Until: start.Add(min(w.For, n.cfg.MaxWait)), Keep: w.Keep, Tenant: w.Tenant}
}

// heldBy is the 409 for key, held by the grant g at now (deadline and
// now in the FSM's clock, nanoseconds): it tells the holder's remaining
// lease, and who the holder is as its owner says (drivers.HolderOf of the
// owner its request named: never the owner's token, nor the credential
// recorded with it).
func heldBy(key string, g engine.Grant, now int64) error {
	_, owner, _ := access.SplitOwner(g.Owner)
	return &drivers.NotAcquiredError{Key: key, HolderTTL: time.Duration(max(g.Deadline-now, 0)), Holder: drivers.HolderOf(owner)}
}

// proposeAcquire proposes the acquire e of key's mutex, preceded, when the
// key's grant is past its deadline while waiters are queued, by that
// grant's expiry: the engine counts an expired key as free, and without it
// a newcomer would overtake the queue in the moment before the expiry loop
// commits. Both entries enter raft in order from this goroutine, so this
// costs no extra round trip. A waiting acquire of a key someone else holds
// only joins the queue: it is proposed lazily (see rounds).
func (n *Node) proposeAcquire(ctx context.Context, e fsm.Entry, key string) (*fsm.Response, error) {
	var expire *rounds.Proposal
	lazy := false
	// The table is read only when it can matter: for a wait, or when some
	// key has waiters. A stale read is harmless: the FSM decides.
	if e.Wait || n.fsm.WaiterCount() > 0 {
		info, ok, err := n.fsm.Get(ctx, key)
		switch {
		case err != nil || !ok:
		case info.Deadline <= e.Now && info.Waiters > 0:
			expire = n.propose(fsm.Entry{Op: engine.OpExpire, Key: key, Owner: info.Owner, ExpectFence: info.Fence, Now: e.Now})
		case e.Wait && info.Owner != e.Owner && info.Deadline > e.Now:
			lazy = true
		}
	}
	f := n.submit(e, lazy)
	if expire != nil {
		_, _ = expire.Wait()
	}
	return f.Wait()
}

// acquire serves one acquire request on the leader l through the hand-off
// protocol (see package handoff), its wait capped at Config.MaxWait, and
// maps its answer: a refusal is a 409 naming the key in the way, with its
// holder's remaining lease; an ended term or a client gone a 503. ctx is
// the request's: it ends when the client goes away or the node shuts down.
func (n *Node) acquire(ctx context.Context, l *leadership, e fsm.Entry, wait httpapi.Wait) ([]uint64, error) {
	start := time.Now()
	a, err := n.waits.Acquire(ctx, termPort{n, l}, e, n.waitFrom(start, wait))
	switch {
	case errors.Is(err, handoff.ErrEnded) || (err != nil && ctx.Err() != nil):
		return nil, unavailable("acquire", err)
	case err != nil:
		return nil, applyErr("acquire", err)
	case a.Fences != nil:
		n.metrics.AcquireWait.Observe(time.Since(start).Seconds())
		return a.Fences, nil
	}
	n.metrics.Contention.Inc()
	if a.TimedOut {
		return nil, n.waitRanOut(ctx, l, a.Waiting)
	}
	return nil, heldBy(cmp.Or(a.Held.Key, e.Key), a.Held, a.Now)
}

// waitRanOut is the 409 of a wait for key that ran out: it tells how long
// the holder has left, as for an acquire that finds the key held (a local
// read of the leader's table).
func (n *Node) waitRanOut(ctx context.Context, l *leadership, key string) error {
	if info, ok, err := n.fsm.Get(ctx, key); err == nil && ok {
		return heldBy(key, info.Grant, l.clock.Now())
	}
	return &drivers.NotAcquiredError{Key: key}
}

// release frees key if owner holds it.
func (n *Node) release(l *leadership, key, owner string) (bool, error) {
	resp, err := n.apply(fsm.Entry{Op: engine.OpRelease, Key: key, Owner: owner, Now: l.clock.Now()})
	if err != nil {
		return false, applyErr("release", err)
	}
	return resp.Result.OK, nil
}

// extend sets owner's grant of key to end ttl from now.
func (n *Node) extend(l *leadership, key, owner string, ttl time.Duration) (bool, error) {
	resp, err := n.apply(fsm.Entry{Op: engine.OpExtend, Key: key, Owner: owner, TTL: ttl, Now: l.clock.Now()})
	if err != nil {
		return false, applyErr("extend", err)
	}
	return resp.Result.OK, nil
}

// forceRelease frees key whoever holds it.
func (n *Node) forceRelease(l *leadership, key string) (bool, error) {
	resp, err := n.apply(fsm.Entry{Op: engine.OpForceRelease, Key: key, Now: l.clock.Now()})
	if err != nil {
		return false, applyErr("force-release", err)
	}
	return resp.Result.OK, nil
}
