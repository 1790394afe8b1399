package handoff

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// slowCommitPort is a term whose every commit takes commit (a loaded
// disk's fsync) and whose table holds every key for someone else: a
// waiting acquire is queued, and nothing is ever handed off.
type slowCommitPort struct {
	commit   time.Duration
	mu       sync.Mutex
	queued   map[string]bool // key -> the owner is queued
	proposed map[engine.Op]int
}

func (p *slowCommitPort) Now() int64               { return time.Now().UnixNano() }
func (p *slowCommitPort) Context() context.Context { return context.Background() }

func (p *slowCommitPort) Propose(_ context.Context, e fsm.Entry) (*fsm.Response, error) {
	time.Sleep(p.commit) // the fault itself, not a synchronisation
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proposed == nil {
		p.proposed = map[engine.Op]int{}
	}
	p.proposed[e.Op]++
	r := engine.Result{Grant: engine.Grant{Key: e.Key, Owner: "holder", Fence: 1}}
	switch e.Op {
	case engine.OpAcquire:
		r.Queued = e.Wait
		p.queued[e.Key] = e.Wait
	case engine.OpAcquireKeys:
		r.Queued = e.Wait
		r.Grants = make([]engine.Grant, len(e.Keys))
		if !e.Wait {
			// A keep-alive's refresh: the owner holds what it names.
			r.OK = true
			for i, k := range e.Keys {
				r.Grants[i] = engine.Grant{Key: k, Owner: e.Owner, Fence: uint64(i + 1)}
			}
			break
		}
		for _, k := range e.Keys {
			p.queued[k] = e.Wait
		}
	case engine.OpCancelWait:
		r.OK = p.queued[e.Key]
		delete(p.queued, e.Key)
	case engine.OpExtend:
		r.OK = true // the owner holds what it extends
	}
	return &fsm.Response{Result: r}, nil
}

func (p *slowCommitPort) Queued(_ context.Context, key, _ string) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.queued[key], nil
}

func (p *slowCommitPort) QueuedOnceDelivered(ctx context.Context, key, owner string) (bool, error) {
	return p.Queued(ctx, key, owner)
}

// A wait counts from the request's arrival: the client asks for a wait a
// margin short of its own deadline and expects the 409 inside that
// margin, which slow commits must not use up. With the wait and every
// commit 300 ms long:
//
//   - a single key's wait that ran out is answered when the queueing
//     commit returns (300 ms), its clean-up committed after the answer;
//     counted from that commit and cleaned up first, 900 ms;
//   - an acquire-all's is answered after its clean-ups (a 409 says the
//     set holds nothing), which run side by side: 600 ms; counted from
//     the queueing commit and cleaned up key after key, 1200 ms.
//
// The clean-up happens either way: the queue entries are cancelled and
// the record emptied.
func TestWait_CountsFromArrivalAndCleansUpWithinTheMargin(t *testing.T) {
	const wait, commit = 300 * time.Millisecond, 300 * time.Millisecond
	for _, tc := range []struct {
		name   string
		keys   []string
		before time.Duration // the answer is due before this
		run    func(r *Requests, p Port, until time.Time) (timedOut bool, err error)
	}{
		{"acquire", []string{"k"}, wait + commit, func(r *Requests, p Port, until time.Time) (bool, error) {
			a, err := r.Acquire(context.Background(), p, fsm.Entry{Op: engine.OpAcquire, Key: "k", Owner: "o", TTL: time.Minute}, Wait{Until: until})
			return a.TimedOut, err
		}},
		{"acquire-all", []string{"a", "b"}, wait + 2*commit, func(r *Requests, p Port, until time.Time) (bool, error) {
			a, err := r.Acquire(context.Background(), p, fsm.Entry{Op: engine.OpAcquireKeys, Keys: []string{"a", "b"}, Owner: "o", TTL: time.Minute}, Wait{Until: until})
			return a.TimedOut, err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &slowCommitPort{commit: commit, queued: map[string]bool{}}
			r := NewRequests(nil)
			start := time.Now()
			timedOut, err := tc.run(r, p, start.Add(wait))
			answered := time.Since(start)
			if err != nil || !timedOut {
				t.Fatalf("answer: timed out %v, %v; want a wait that ran out", timedOut, err)
			}
			if answered >= tc.before {
				t.Errorf("answered %v after arrival; want before %v: the wait counts from arrival, and its clean-up costs one commit at most", answered, tc.before)
			}
			r.Wait()
			for _, k := range tc.keys {
				if q, _ := p.Queued(t.Context(), k, "o"); q {
					t.Errorf("after the clean-up, still queued for %q", k)
				}
				if n, _ := r.Live(k, "o"); n != 0 {
					t.Errorf("after the clean-up, %d live requests for %q", n, k)
				}
			}
		})
	}
}

// A request whose wait ran out keeps its owner's place for keep: the
// owner's next request finds itself queued and waits again, proposing
// nothing; with no next request the place is given up once keep passes.
func TestWait_KeepsThePlaceForTheNextRequest(t *testing.T) {
	p := &slowCommitPort{queued: map[string]bool{}}
	r := NewRequests(nil)
	e := fsm.Entry{Op: engine.OpAcquire, Key: "k", Owner: "o", TTL: time.Minute}
	chunk := func(keep time.Duration) {
		t.Helper()
		a, err := r.Acquire(t.Context(), p, e, Wait{Until: time.Now().Add(20 * time.Millisecond), Keep: keep})
		if err != nil || !a.TimedOut {
			t.Fatalf("a chunk = %+v, %v; want its wait run out", a, err)
		}
	}
	waitLeft := func() {
		t.Helper()
		left := make(chan struct{})
		go func() { r.Wait(); close(left) }()
		select {
		case <-left:
		case <-time.After(10 * time.Second):
			t.Fatal("the requests did not leave")
		}
	}

	chunk(time.Hour) // the next request comes long before the hour
	if q, _ := p.Queued(t.Context(), "k", "o"); !q {
		t.Fatal("the place was given up with the answer")
	}
	chunk(0) // the last chunk
	waitLeft()
	p.mu.Lock()
	acquires, cancels := p.proposed[engine.OpAcquire], p.proposed[engine.OpCancelWait]
	p.mu.Unlock()
	if acquires != 1 || cancels != 1 {
		t.Fatalf("%d acquires and %d cancels proposed; want the first chunk's acquire, the last one's cancel", acquires, cancels)
	}
	if q, _ := p.Queued(t.Context(), "k", "o"); q {
		t.Fatal("still queued after the last chunk")
	}

	chunk(50 * time.Millisecond) // and no next request
	waitLeft()
	if q, _ := p.Queued(t.Context(), "k", "o"); q {
		t.Fatal("still queued once the place's keep passed")
	}
	if n, _ := r.Live("k", "o"); n != 0 {
		t.Fatalf("%d live requests left", n)
	}
}

// Beyond MaxKept places kept at once by one tenant, its place is given
// up with its answer, as without keep; another tenant's place is kept.
func TestWait_KeepsNoMoreThanMaxKeptPlacesOfOneTenant(t *testing.T) {
	p := &slowCommitPort{queued: map[string]bool{}}
	r := NewRequests(nil)
	r.kept["flood"] = MaxKept
	chunk := func(key, tenant string, keep time.Duration) {
		t.Helper()
		a, err := r.Acquire(t.Context(), p, fsm.Entry{Op: engine.OpAcquire, Key: key, Owner: "o", TTL: time.Minute},
			Wait{Until: time.Now().Add(20 * time.Millisecond), Keep: keep, Tenant: tenant})
		if err != nil || !a.TimedOut {
			t.Fatalf("Acquire = %+v, %v; want its wait run out", a, err)
		}
	}
	chunk("k", "flood", time.Hour)
	poll.Until(t, 10*time.Second, "the flooding tenant's place beyond MaxKept to be given up", func() bool {
		q, _ := p.Queued(t.Context(), "k", "o")
		return !q
	})
	if got := r.Kept("flood"); got != MaxKept {
		t.Fatalf("the flooding tenant keeps %d; want the %d it kept", got, MaxKept)
	}
	chunk("other", "other", time.Hour)
	if q, _ := p.Queued(t.Context(), "other", "o"); !q || r.Kept("other") != 1 {
		t.Fatalf("another tenant's place: queued %v, kept %d; want it kept while the first tenant is at MaxKept", q, r.Kept("other"))
	}
	chunk("other", "other", 0) // the last chunk: the place is given up
	r.Wait()
	if q, _ := p.Queued(t.Context(), "other", "o"); q || r.Kept("other") != 0 {
		t.Fatalf("after the last chunk: queued %v, kept %d; want the place given up", q, r.Kept("other"))
	}
}

// An acquire-all's places are kept as one: its chunk counts once however
// many keys it waits for, and they are left together, once the next chunk
// has found them or its keep has passed.
func TestWait_AnAcquireAllsPlacesCountOnce(t *testing.T) {
	p := &slowCommitPort{queued: map[string]bool{}}
	r := NewRequests(nil)
	keys := []string{"a", "b", "c", "d"}
	a, err := r.Acquire(t.Context(), p, fsm.Entry{Op: engine.OpAcquireKeys, Keys: keys, Owner: "o", TTL: time.Minute},
		Wait{Until: time.Now().Add(20 * time.Millisecond), Keep: 100 * time.Millisecond, Tenant: "t"})
	if err != nil || !a.TimedOut {
		t.Fatalf("Acquire = %+v, %v; want its wait run out", a, err)
	}
	if got := r.Kept("t"); got != 1 {
		t.Fatalf("a set of %d keys keeps %d places; want one", len(keys), got)
	}
	r.Wait()
	for _, k := range keys {
		if q, _ := p.Queued(t.Context(), k, "o"); q {
			t.Errorf("still queued for %q once the keep passed", k)
		}
	}
	if got := r.Kept("t"); got != 0 {
		t.Fatalf("%d places kept once the keep passed", got)
	}
}

// An acquire-all's keep-alive renews every key it holds in one entry, so
// one commit: one extend after another, the keep-alive of a set of 8 keys
// on 150 ms commits once took 1.2 s, beyond a TTL of a second that it is
// meant to keep alive.
func TestKeepAlive_RenewsTheKeysInOneCommit(t *testing.T) {
	const commit = 150 * time.Millisecond
	p := &slowCommitPort{commit: commit, queued: map[string]bool{}}
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	start := time.Now()
	a, err := keepAlive(t.Context(), p, fsm.Entry{Op: engine.OpAcquireKeys, Keys: keys, Owner: "o", TTL: time.Second}, make([]bool, len(keys)), time.Second)
	took := time.Since(start)
	if err != nil || a != nil {
		t.Fatalf("keepAlive = %+v, %v; want every key renewed", a, err)
	}
	p.mu.Lock()
	entries := p.proposed
	p.mu.Unlock()
	if entries[engine.OpAcquireKeys] != 1 || len(entries) != 1 {
		t.Fatalf("entries proposed: %v; want one refresh of the %d keys", entries, len(keys))
	}
	if took >= 4*commit {
		t.Fatalf("the keep-alive of %d keys took %v; want one commit (%v)", len(keys), took, commit)
	}
}

// Once Wait has begun (the node is stopping), a request whose wait ran
// out leaves before it answers: nothing is started that Wait would miss.
func TestWait_AfterWaitBeganTheRequestLeavesBeforeItsAnswer(t *testing.T) {
	p := &slowCommitPort{queued: map[string]bool{}}
	r := NewRequests(nil)
	r.Wait()
	a, err := r.Acquire(t.Context(), p, fsm.Entry{Op: engine.OpAcquire, Key: "k", Owner: "o", TTL: time.Minute},
		Wait{Until: time.Now().Add(20 * time.Millisecond)})
	if err != nil || !a.TimedOut {
		t.Fatalf("Acquire = %+v, %v; want its wait run out", a, err)
	}
	if q, _ := p.Queued(t.Context(), "k", "o"); q {
		t.Fatal("answered before its clean-up, after Wait had begun")
	}
	if n, _ := r.Live("k", "o"); n != 0 {
		t.Fatalf("%d live requests after the answer", n)
	}
}
