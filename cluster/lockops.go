package cluster

import (
	"context"
	"errors"
	"time"

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

// acquireLock serves an acquire on the leader l: it caps wait at
// Config.MaxWait and records the contention and wait metrics.
func (n *Node) acquireLock(ctx context.Context, l *leadership, key, owner string, ttl, wait time.Duration) (uint64, error) {
	wait = min(wait, n.cfg.MaxWait)
	start := time.Now()
	fence, err := n.acquire(ctx, l, key, owner, ttl, wait)
	if err != nil {
		if isConflict(err) {
			n.metrics.Contention.Inc()
		}
		return 0, err
	}
	n.metrics.AcquireWait.Observe(time.Since(start).Seconds())
	return fence, nil
}

func isConflict(err error) bool {
	var na *drivers.NotAcquiredError
	return errors.As(err, &na)
}

// heldBy is the 409 for key, held by a grant with deadline at now (both
// in the FSM's clock, nanoseconds): it tells the holder's remaining lease.
func heldBy(key string, deadline, now int64) error {
	return &drivers.NotAcquiredError{Key: key, HolderTTL: time.Duration(max(deadline-now, 0))}
}

func (n *Node) acquireNow(ctx context.Context, l *leadership, key, owner string, ttl time.Duration) (uint64, error) {
	now := l.clock.Now()
	resp, err := n.proposeAcquire(ctx, fsm.Entry{Op: engine.OpAcquire, Key: key, Owner: owner, TTL: ttl, Now: now})
	if err != nil {
		return 0, applyErr("acquire", err)
	}
	if !resp.Result.OK {
		return 0, heldBy(key, resp.Result.Grant.Deadline, now)
	}
	return resp.Result.Grant.Fence, nil
}

// proposeAcquire proposes the acquire e, preceded, when the key's grant is
// past its deadline while waiters are queued, by that grant's expiry: the
// engine counts an expired key as free, and without it a newcomer would
// overtake the queue in the moment before the expiry loop commits. Both
// entries enter raft in order from this goroutine, so this costs no extra
// round trip. A waiting acquire of a key someone else holds only joins
// the queue: it is proposed lazily (see rounds).
func (n *Node) proposeAcquire(ctx context.Context, e fsm.Entry) (*fsm.Response, error) {
	var expire *rounds.Proposal
	lazy := false
	// The table is read only when it can matter: for a wait, or when some
	// key has waiters. A stale read is harmless: the FSM decides.
	if e.Wait || n.fsm.WaiterCount() > 0 {
		info, ok, err := n.fsm.Get(ctx, e.Key)
		switch {
		case err != nil || !ok:
		case info.Deadline <= e.Now && info.Waiters > 0:
			expire = n.propose(fsm.Entry{Op: engine.OpExpire, Key: e.Key, Owner: info.Owner, ExpectFence: info.Fence, Now: e.Now})
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

// acquire serves one acquire request as a live request of (key, owner):
// see liveRequests for how it stays out of the way of the owner's other
// requests, abandoned or retried. ctx is the request's: it ends when the
// client goes away or the node shuts down.
func (n *Node) acquire(ctx context.Context, l *leadership, key, owner string, ttl, wait time.Duration) (fence uint64, err error) {
	q := n.waits.enter(key, owner)
	defer func() { n.leave(l, q, fence) }()
	if err := n.waits.settle(ctx, l.ctx.Done(), q); err != nil {
		return 0, unavailable("acquire", err)
	}
	if wait > 0 {
		return n.acquireWait(ctx, l, q, ttl, wait)
	}
	return n.acquireNow(ctx, l, key, owner, ttl)
}

// leave ends q. When it is its owner's last live request it cleans up
// after all of them: it cancels the owner's queue entry, then releases a
// grant handed off to the owner that no request returned, which passes
// the key on. Both are retried until they commit or leadership ends (the
// next leader cancels every queued waiter when it takes over).
func (n *Node) leave(l *leadership, q *request, fence uint64) {
	if !n.waits.leave(q, fence) {
		return
	}
	defer n.waits.settled(q)
	key, owner := q.w.Key, q.w.Owner
	// Read outside the registry's lock: the FSM delivers hand-offs into
	// the registry while it holds its own. When the owner is not queued,
	// IsWaiter returns once a hand-off that dequeued it has been delivered,
	// so unreturned below sees it.
	queued, err := n.fsm.IsWaiter(l.ctx, key, owner)
	if err != nil {
		n.log.Warn("clean-up: reading the wait queue failed", "error", err)
		return // the term ended: the next leader cancels queued waiters
	}
	if queued {
		e := fsm.Entry{Op: engine.OpCancelWait, Key: key, Owner: owner}
		if _, err := n.applyWhileLeading(l, e); err != nil {
			n.log.Warn("cancel wait failed", "error", err)
			return
		}
	}
	if lost := n.waits.unreturned(q); lost != 0 {
		e := fsm.Entry{Op: engine.OpRelease, Key: key, Owner: owner}
		if _, err := n.applyWhileLeading(l, e); err != nil {
			n.log.Warn("release of a grant no request returned failed", "fence", lost, "error", err)
		}
	}
}

// acquireWait queues the request in the replicated table and waits for
// the hand-off. On timeout or client cancellation it just returns: the
// owner's last live request removes the queue entry when it leaves (and
// releases a grant that raced with that).
func (n *Node) acquireWait(ctx context.Context, l *leadership, q *request, ttl, wait time.Duration) (uint64, error) {
	key, owner := q.w.Key, q.w.Owner
	ch := n.waits.listen(q)
	// A retry of a request already queued (after a client timeout, say)
	// just waits again: the queue entry is committed, a hand-off from now
	// on reaches the channel above, and the entry cannot be cancelled
	// while this request lives. Its TTL stays the one first asked for.
	// The engine's answer is enough here, without leave's wait for
	// deliveries (which would hold every waiting acquire behind the batch
	// being applied): if the engine already handed the owner the key, the
	// acquire proposed below is a refresh of that grant.
	queued, err := n.fsm.IsQueued(ctx, key, owner)
	if err != nil {
		return 0, unavailable("acquire", err)
	}
	if !queued {
		now := l.clock.Now()
		resp, err := n.proposeAcquire(ctx, fsm.Entry{Op: engine.OpAcquire, Key: key, Owner: owner, TTL: ttl, Now: now, Wait: true})
		if err != nil {
			return 0, applyErr("acquire", err)
		}
		if resp.Result.OK {
			return resp.Result.Grant.Fence, nil
		}
		if !resp.Result.Queued {
			return 0, heldBy(key, resp.Result.Grant.Deadline, now)
		}
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case g := <-ch:
		if err := ctx.Err(); err != nil {
			// The client went away as the key came: nobody will get this
			// answer, so it is not returned, and leave releases the grant
			// (unreturned) rather than leave it blocking the key for a TTL.
			return 0, unavailable("acquire", err)
		}
		return g.Fence, nil
	case <-l.ctx.Done():
		return 0, unavailable("acquire", errLeadershipChanged)
	case <-timer.C:
	case <-ctx.Done():
	}
	if err := ctx.Err(); err != nil {
		// The client went away, or this node is shutting down.
		return 0, unavailable("acquire", err)
	}
	// The wait ran out: tell how long the holder has left, as for an
	// acquire that finds the key held (a local read of the leader's table).
	if info, ok, err := n.fsm.Get(ctx, key); err == nil && ok {
		return 0, heldBy(key, info.Deadline, l.clock.Now())
	}
	return 0, &drivers.NotAcquiredError{Key: key}
}

// applyWhileLeading proposes e (stamped with l's clock) until it commits
// or l's leadership ends. A cleanup entry (a cancel-wait, a release of a
// grant nobody returned) must not be dropped on a transient failure: the
// entry it leaves behind would be granted to nobody for up to its TTL.
func (n *Node) applyWhileLeading(l *leadership, e fsm.Entry) (*fsm.Response, error) {
	backoff := 10 * time.Millisecond
	for {
		e.Now = l.clock.Now()
		resp, err := n.apply(e)
		if err == nil || leadershipEnded(err) {
			return resp, err
		}
		n.log.Warn("cleanup proposal failed; retrying", "type", e.Type, "error", err)
		t := time.NewTimer(backoff)
		select {
		case <-l.ctx.Done():
			t.Stop()
			return nil, errLeadershipChanged
		case <-n.stopping.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
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
