package handoff

import (
	"context"
	"testing"
	"time"

	"github.com/zerotal/lock/engine"
)

// The record's rules, without raft: only the owner's last live request
// cleans up, whatever kind the others were, and a request that arrives
// while that clean-up is on its way waits for it.

func TestLiveRequests_OnlyTheLastRequestCleansUp(t *testing.T) {
	r := NewRequests(nil)
	first, retry := r.enter("k", "b"), r.enter("k", "b")
	r.listen(first)
	r.listen(retry)
	if r.leaveRecord(first, 0) {
		t.Fatal("an abandoned request cleaned up while another request waits on the entry")
	}
	r.Deliver(engine.Grant{Key: "k", Owner: "b", Fence: 7})
	if !r.leaveRecord(retry, 7) {
		t.Fatal("the last request of an owner that was queued did not check for a queue entry")
	}
	if f := r.unreturned(retry); f != 0 {
		t.Fatalf("the grant the retry returned (fence 7) is left to release as %d", f)
	}
	r.settled(retry)
	if n, _ := r.Live("k", "b"); n != 0 || len(r.m) != 0 {
		t.Fatalf("%d live requests and %d claims left", n, len(r.m))
	}
}

func TestLiveRequests_UnreturnedGrantIsReleasedByTheLastToLeave(t *testing.T) {
	r := NewRequests(nil)
	q := r.enter("k", "b")
	r.listen(q)
	if !r.leaveRecord(q, 0) {
		t.Fatal("the only request left its queue entry behind")
	}
	r.Deliver(engine.Grant{Key: "k", Owner: "b", Fence: 9}) // raced with the cancel

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
	if r.leaveRecord(retry, 0) {
		t.Fatal("a request that never listened cleans up what was already cleaned")
	}
	if len(r.m) != 0 {
		t.Fatalf("%d claims left", len(r.m))
	}
}

// A wait abandoned beside an acquire without wait: the latter, leaving
// last, cleans up the queue entry the wait left.
func TestLiveRequests_NonWaitingRequestLeavingLastCleansUp(t *testing.T) {
	r := NewRequests(nil)
	wait, now := r.enter("k", "b"), r.enter("k", "b")
	r.listen(wait)
	if r.leaveRecord(wait, 0) {
		t.Fatal("the wait cleaned up while another request of its owner is live")
	}
	if !r.leaveRecord(now, 0) {
		t.Fatal("the last request left the abandoned wait's queue entry behind")
	}
	r.settled(now)
	if alone := r.enter("k", "b"); r.leaveRecord(alone, 0) {
		t.Fatal("a lone acquire without wait asks for a clean-up")
	}
	if len(r.m) != 0 {
		t.Fatalf("%d claims left", len(r.m))
	}
}
