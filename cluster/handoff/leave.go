package handoff

import (
	"errors"
	"sync"
	"time"

	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
)

// leave ends q. When it is its owner's last live request it cleans up
// after all of them: it cancels the owner's queue entry, then releases a
// grant handed off to the owner that no request returned, which passes
// the key on. Both are retried until they commit or the term ends (the
// next leader cancels every queued waiter when it takes over).
func (r *Requests) leave(p Port, q *request, fence uint64) {
	if r.leaveRecord(q, fence) {
		r.cleanUp(p, q)
	}
}

// leaveLater is leave of the requests of one answer whose wait ran out
// (each key's of one request), in the background: the
// answer goes out at the wait's end rather than a commit or two later.
// First they stay live for up to w.Keep, until the owner's next request
// has entered for each of their keys, so that it finds the owner's places
// in the queues (it is queued already, and waits again); then they leave,
// side by side. The clean-up is that of a client gone away: a hand-off
// made meanwhile is returned by the next request, or released by the last
// to leave. Wait waits for these.
//
// One tenant keeps at most MaxKept places at once, a set's counting
// once: each costs a goroutine, no longer counted by the node's
// cap on waiting requests, for up to its keep. Beyond that the places
// are given up with the answer, as without keep; another tenant's are
// kept still.
func (r *Requests) leaveLater(p Port, qs []*request, w Wait) {
	keep := w.Keep
	var next []<-chan struct{}
	if keep > 0 && r.keepPlace(w.Tenant) {
		for _, q := range qs {
			next = append(next, r.nextRequest(q))
		}
	} else {
		keep = 0
	}
	r.goLater(func() {
		if keep > 0 {
			keepUntil(p, next, keep)
			r.placeLeft(w.Tenant)
		}
		r.leaveEach(p, qs, nil)
	})
}

// keepUntil returns once every channel of next is closed, keep has
// passed, or p's term has ended.
func keepUntil(p Port, next []<-chan struct{}, keep time.Duration) {
	t := time.NewTimer(keep)
	defer t.Stop()
	for _, ch := range next {
		select {
		case <-ch:
		case <-t.C:
			return
		case <-p.Context().Done():
			return
		}
	}
}

// leaveEach ends every request of qs, q returned fences[i] (nil: none),
// side by side: their clean-ups are independent of each other, so they
// share commits rather than run one commit after another.
func (r *Requests) leaveEach(p Port, qs []*request, fences []uint64) {
	fence := func(i int) uint64 {
		if fences == nil {
			return 0
		}
		return fences[i]
	}
	if len(qs) == 1 {
		r.leave(p, qs[0], fence(0))
		return
	}
	var wg sync.WaitGroup
	for i, q := range qs {
		wg.Go(func() { r.leave(p, q, fence(i)) })
	}
	wg.Wait()
}

// MaxKept bounds the places one tenant keeps at once after their waits
// ran out (see Wait.Keep), a set's counting once.
const MaxKept = 1024

// cleanUp is the clean-up leave asked for; q owns the settling.
func (r *Requests) cleanUp(p Port, q *request) {
	defer r.settled(q)
	key, owner := q.w.Key, q.w.Owner
	// Read outside the record's lock: the FSM delivers hand-offs into the
	// record while it holds its own. When the owner is not queued this
	// returns once a hand-off that dequeued it has been delivered, so
	// unreturned below sees it.
	queued, err := p.QueuedOnceDelivered(p.Context(), key, owner)
	if err != nil {
		// The term ended (a stop, a lost leadership: no incident, and a
		// node that stops with kept places has one per key): the next
		// leader cancels queued waiters.
		if p.Context().Err() == nil {
			r.log.Warn("clean-up: reading the wait queue failed", "error", err)
		}
		return
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
