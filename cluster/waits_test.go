package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/zerotal/lock/engine"
)

// The record's rules, without raft: an abandoned wait cancels only as
// the owner's last live request, a grant handed off is released only by
// the last request to leave without returning it, and a request that
// arrives while that is settling waits for it.
func TestLiveRequests_OnlyTheLastRequestCleansUp(t *testing.T) {
	r := newLiveRequests()
	first, retry := r.enter("k", "b"), r.enter("k", "b")
	r.listen(first)
	r.listen(retry)
	if r.abandon(first) {
		t.Fatal("an abandoned request cancelled the entry another request waits on")
	}
	r.deliver(engine.Grant{Key: "k", Owner: "b", Fence: 7})
	if f := r.leave(first, 0); f != 0 {
		t.Fatalf("the abandoned request would release fence %d that the retry may return", f)
	}
	if f := r.leave(retry, 7); f != 0 {
		t.Fatalf("leaving after returning the grant asks to release fence %d", f)
	}
	if n := r.live("k", "b"); n != 0 || len(r.m) != 0 {
		t.Fatalf("%d live requests and %d claims left", n, len(r.m))
	}
}

func TestLiveRequests_UnreturnedGrantIsReleasedByTheLastToLeave(t *testing.T) {
	r := newLiveRequests()
	q := r.enter("k", "b")
	r.listen(q)
	if !r.abandon(q) {
		t.Fatal("the only request did not cancel its entry")
	}
	r.deliver(engine.Grant{Key: "k", Owner: "b", Fence: 9}) // raced with the cancel

	// A retry arriving now waits for the cleanup to commit.
	retry := r.enter("k", "b")
	settled := make(chan error, 1)
	go func() { settled <- r.settle(context.Background(), nil, retry) }()
	if f := r.leave(q, 0); f != 0 {
		t.Fatalf("release of fence %d while a retry is live", f)
	}
	select {
	case err := <-settled:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the retry still waits after the abandoned request left")
	}
	// The retry gives up without returning the grant: it must release it.
	if f := r.leave(retry, 0); f != 9 {
		t.Fatalf("the last request leaves fence %d to release, want 9", f)
	}
	late := r.enter("k", "b")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := r.settle(ctx, nil, late); err == nil {
		t.Fatal("a request went on while the release was on its way")
	}
	r.settled(retry)
	if err := r.settle(context.Background(), nil, late); err != nil {
		t.Fatal(err)
	}
	if f := r.leave(late, 0); f != 0 {
		t.Fatalf("fence %d released twice", f)
	}
	if len(r.m) != 0 {
		t.Fatalf("%d claims left", len(r.m))
	}
}
