package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
)

// The record's rules, without raft: only the owner's last live request
// cleans up, whatever kind the others were, and a request that arrives
// while that clean-up is on its way waits for it.

func TestLiveRequests_OnlyTheLastRequestCleansUp(t *testing.T) {
	r := newLiveRequests()
	first, retry := r.enter("k", "b"), r.enter("k", "b")
	r.listen(first)
	r.listen(retry)
	if r.leave(first, 0) {
		t.Fatal("an abandoned request cleaned up while another request waits on the entry")
	}
	r.deliver(engine.Grant{Key: "k", Owner: "b", Fence: 7})
	if !r.leave(retry, 7) {
		t.Fatal("the last request of an owner that was queued did not check for a queue entry")
	}
	if f := r.unreturned(retry); f != 0 {
		t.Fatalf("the grant the retry returned (fence 7) is left to release as %d", f)
	}
	r.settled(retry)
	if n := r.live("k", "b"); n != 0 || len(r.m) != 0 {
		t.Fatalf("%d live requests and %d claims left", n, len(r.m))
	}
}

func TestLiveRequests_UnreturnedGrantIsReleasedByTheLastToLeave(t *testing.T) {
	r := newLiveRequests()
	q := r.enter("k", "b")
	r.listen(q)
	if !r.leave(q, 0) {
		t.Fatal("the only request left its queue entry behind")
	}
	r.deliver(engine.Grant{Key: "k", Owner: "b", Fence: 9}) // raced with the cancel

	// A retry arriving now waits for the clean-up to commit.
	retry := r.enter("k", "b")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := r.settle(ctx, nil, retry); err == nil {
		t.Fatal("a request went on while the clean-up was on its way")
	}
	if f := r.unreturned(q); f != 9 {
		t.Fatalf("the clean-up releases fence %d, want 9", f)
	}
	r.settled(q)
	if err := r.settle(context.Background(), nil, retry); err != nil {
		t.Fatal(err)
	}
	if r.leave(retry, 0) {
		t.Fatal("a request that never listened cleans up what was already cleaned")
	}
	if len(r.m) != 0 {
		t.Fatalf("%d claims left", len(r.m))
	}
}

// A wait abandoned beside an acquire without wait: the latter, leaving
// last, cleans up the queue entry the wait left.
func TestLiveRequests_NonWaitingRequestLeavingLastCleansUp(t *testing.T) {
	r := newLiveRequests()
	wait, now := r.enter("k", "b"), r.enter("k", "b")
	r.listen(wait)
	if r.leave(wait, 0) {
		t.Fatal("the wait cleaned up while another request of its owner is live")
	}
	if !r.leave(now, 0) {
		t.Fatal("the last request left the abandoned wait's queue entry behind")
	}
	r.settled(now)
	if alone := r.enter("k", "b"); r.leave(alone, 0) {
		t.Fatal("a lone acquire without wait asks for a clean-up")
	}
	if len(r.m) != 0 {
		t.Fatalf("%d claims left", len(r.m))
	}
}

// The record as tests read it.

// pending is the number of requests listening for a hand-off.
func (r *liveRequests) pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.m {
		n += len(c.waiting)
	}
	return n
}

// cleaning reports whether the last live request of owner for key is
// cleaning up (it has left and not settled yet).
func (r *liveRequests) cleaning(key, owner string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.m[fsm.Waiter{Key: key, Owner: owner}]
	return c != nil && c.settling != nil
}

// live is the number of live requests of owner for key.
func (r *liveRequests) live(key, owner string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.m[fsm.Waiter{Key: key, Owner: owner}]; c != nil {
		return c.live
	}
	return 0
}
