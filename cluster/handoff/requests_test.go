package handoff

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
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

// stepPort is a term whose proposals wait for the test: each is applied
// to the model's table when the test says, and answered when it says, in
// the order it chooses (raft answers them in order, but the requests'
// goroutines read their answers in any order).
type stepPort struct {
	mu      sync.Mutex
	tables  modelTables
	index   uint64
	pending []*stepProposal
}

type stepProposal struct {
	e    fsm.Entry
	resp *fsm.Response
	done chan struct{}
}

func (p *stepPort) Now() int64               { return time.Now().UnixNano() }
func (p *stepPort) Context() context.Context { return context.Background() }

func (p *stepPort) Propose(_ context.Context, e fsm.Entry) (*fsm.Response, error) {
	sp := &stepProposal{e: e, done: make(chan struct{})}
	p.mu.Lock()
	p.pending = append(p.pending, sp)
	p.mu.Unlock()
	<-sp.done
	return sp.resp, nil
}

func (p *stepPort) Queued(_ context.Context, key, owner string) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tables[key].queued(owner), nil
}

func (p *stepPort) QueuedOnceDelivered(ctx context.Context, key, owner string) (bool, error) {
	return p.Queued(ctx, key, owner) // nothing here is handed off
}

// apply applies the oldest pending proposal and returns it unanswered;
// nil when none is pending.
func (p *stepPort) apply() *stepProposal {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.pending) == 0 {
		return nil
	}
	sp := p.pending[0]
	p.pending = p.pending[1:]
	p.index++
	e := sp.e
	sp.resp = &fsm.Response{Index: p.index, Result: p.tables.apply(engine.Command{
		Op: e.Op, Key: e.Key, Keys: e.Keys, Owner: e.Owner, TTL: e.TTL, Now: e.Now, Fence: p.index, Wait: e.Wait, Claim: e.Claim,
	})}
	return sp
}

func (sp *stepProposal) answer() { close(sp.done) }

// A waiting set takes the free keys at once, and is then abandoned for a
// retry of one of them, which the table answers as a refresh of the
// grant the set took. When the set reads its answer only after the retry
// has returned that grant and left, the set's clean-up must still leave
// the grant to the client the retry answered: the double grant of a
// retried wait crossing an abandoned one, on a key taken at once (the
// handoff model, seeds 48 and 203).
func TestAcquire_AbandonedSetLeavesTheKeyItsRetryReturned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &stepPort{tables: modelTables{"j": {limit: 1}, "k": {limit: 1}}}
		p.tables["j"].holders = []engine.Grant{{Key: "j", Owner: "d", Fence: 1}}
		p.index = 1
		r := NewRequests(nil)
		acquire := func(ctx context.Context, keys []string, w Wait) <-chan error {
			done := make(chan error, 1)
			go func() {
				_, err := r.Acquire(ctx, p, fsm.Entry{Op: engine.OpAcquireKeys, Keys: keys, Owner: "b", TTL: time.Hour}, w)
				done <- err
			}()
			return done
		}

		setCtx, abandon := context.WithCancel(t.Context())
		set := acquire(setCtx, []string{"j", "k"}, Wait{Until: time.Now().Add(time.Minute)})
		synctest.Wait()
		queue := p.apply() // k taken at once, b queued for j; the set reads it later
		if res := queue.resp.Result; !res.Queued || res.Grants[1].Fence == 0 {
			t.Fatalf("the set's entry: %+v, want k taken and j queued for", res)
		}
		taken := queue.resp.Result.Grants[1].Fence

		abandon()
		retry := acquire(t.Context(), []string{"k"}, Wait{})
		synctest.Wait()
		refresh := p.apply()
		refresh.answer()
		if err := <-retry; err != nil {
			t.Fatal(err)
		}
		if !p.tables["k"].holds("b", taken) {
			t.Fatalf("the retry's refresh: k is %+v, want b's fence %d", p.tables["k"].holders, taken)
		}

		queue.answer()
		for {
			synctest.Wait()
			sp := p.apply()
			if sp == nil {
				break
			}
			sp.answer()
		}
		if err := <-set; !errors.Is(err, context.Canceled) {
			t.Fatalf("the abandoned set answered %v", err)
		}
		if !p.tables["k"].holds("b", taken) {
			t.Fatalf("the abandoned set's clean-up released k (fence %d), which its retry returned: k is %+v", taken, p.tables["k"].holders)
		}
		if p.tables["j"].queued("b") {
			t.Fatal("the abandoned set left b queued for j")
		}
	})
}
