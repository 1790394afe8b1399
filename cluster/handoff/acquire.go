package handoff

import (
	"context"
	"errors"
	"time"

	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
)

// Acquire serves one acquire request, e (an engine.OpAcquire of e.Key by
// e.Owner with e.TTL; the protocol sets Now and Wait), on the term p, as a
// live request of (key, owner): it waits up to wait for a hand-off when
// the key is held. ctx is the request's: it ends when the client goes
// away or the node shuts down.
//
// Errors: ErrEnded when the term ended, ctx's error when the client went
// away (nobody will read the answer), or Propose's error. A refusal is an
// Answer with Fence 0, never an error.
func (r *Requests) Acquire(ctx context.Context, p Port, e fsm.Entry, wait time.Duration) (a Answer, err error) {
	q := r.enter(e.Key, e.Owner)
	defer func() { r.leave(p, q, a.Fence) }()
	if err := r.settle(ctx, p.Context().Done(), q); err != nil {
		return Answer{}, err
	}
	if wait > 0 {
		return r.acquireWait(ctx, p, q, e, wait)
	}
	return acquireNow(ctx, p, e)
}

func acquireNow(ctx context.Context, p Port, e fsm.Entry) (Answer, error) {
	e.Now, e.Wait = p.Now(), false
	resp, err := p.Propose(ctx, e)
	if err != nil {
		return Answer{}, err
	}
	if !resp.Result.OK {
		return Answer{Held: resp.Result.Grant, Now: e.Now}, nil
	}
	return Answer{Fence: resp.Result.Grant.Fence}, nil
}

// acquireWait queues the request in the replicated table and waits for
// the hand-off. On timeout or client cancellation it just returns: the
// owner's last live request removes the queue entry when it leaves (and
// releases a grant that raced with that).
func (r *Requests) acquireWait(ctx context.Context, p Port, q *request, e fsm.Entry, wait time.Duration) (Answer, error) {
	ch := r.listen(q)
	// A retry of a request already queued (after a client timeout, say)
	// just waits again: the queue entry is committed, a hand-off from now
	// on reaches the channel above, and the entry cannot be cancelled
	// while this request lives. Its TTL stays the one first asked for.
	// The table's answer is enough here, without leave's wait for
	// deliveries (which would hold every waiting acquire behind the batch
	// being applied): if the table already handed the owner the key, the
	// acquire proposed below is a refresh of that grant.
	queued, err := p.Queued(ctx, e.Key, e.Owner)
	if err != nil {
		return Answer{}, err
	}
	if !queued {
		e.Now, e.Wait = p.Now(), true
		resp, err := p.Propose(ctx, e)
		if err != nil {
			return Answer{}, err
		}
		if resp.Result.OK {
			return Answer{Fence: resp.Result.Grant.Fence}, nil
		}
		if !resp.Result.Queued {
			return Answer{Held: resp.Result.Grant, Now: e.Now}, nil
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
			return Answer{}, err
		}
		return Answer{Fence: g.Fence}, nil
	case <-p.Context().Done():
		return Answer{}, ErrEnded
	case <-timer.C:
	case <-ctx.Done():
	}
	if err := ctx.Err(); err != nil {
		return Answer{}, err // the client went away, or the node is stopping
	}
	return Answer{TimedOut: true}, nil
}

// leave ends q. When it is its owner's last live request it cleans up
// after all of them: it cancels the owner's queue entry, then releases a
// grant handed off to the owner that no request returned, which passes
// the key on. Both are retried until they commit or the term ends (the
// next leader cancels every queued waiter when it takes over).
func (r *Requests) leave(p Port, q *request, fence uint64) {
	if !r.leaveRecord(q, fence) {
		return
	}
	defer r.settled(q)
	key, owner := q.w.Key, q.w.Owner
	// Read outside the record's lock: the FSM delivers hand-offs into the
	// record while it holds its own. When the owner is not queued this
	// returns once a hand-off that dequeued it has been delivered, so
	// unreturned below sees it.
	queued, err := p.QueuedOnceDelivered(p.Context(), key, owner)
	if err != nil {
		r.log.Warn("clean-up: reading the wait queue failed", "error", err)
		return // the term ended: the next leader cancels queued waiters
	}
	if queued {
		if err := r.proposeWhileLeading(p, fsm.Entry{Op: engine.OpCancelWait, Key: key, Owner: owner}); err != nil {
			r.log.Warn("cancel wait failed", "error", err)
			return
		}
	}
	if lost := r.unreturned(q); lost != 0 {
		if err := r.proposeWhileLeading(p, fsm.Entry{Op: engine.OpRelease, Key: key, Owner: owner}); err != nil {
			r.log.Warn("release of a grant no request returned failed", "fence", lost, "error", err)
		}
	}
}

// proposeWhileLeading proposes e (stamped with p's clock) until it
// commits or the term ends. A clean-up entry (a cancel-wait, a release of
// a grant nobody returned) must not be dropped on a transient failure:
// the entry it leaves behind would be granted to nobody for up to its TTL.
func (r *Requests) proposeWhileLeading(p Port, e fsm.Entry) error {
	backoff := 10 * time.Millisecond
	for {
		e.Now = p.Now()
		_, err := p.Propose(p.Context(), e)
		if err == nil || errors.Is(err, ErrEnded) {
			return err
		}
		r.log.Warn("clean-up proposal failed; retrying", "op", e.Op, "error", err)
		t := time.NewTimer(backoff)
		select {
		case <-p.Context().Done():
			t.Stop()
			return ErrEnded
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
}
