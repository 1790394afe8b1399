package cluster

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/zerotal/lock/fsm"
)

type waitResult struct {
	owner string
	r     reply
}

// Waiters queue in the replicated table and get the key in arrival order,
// each hand-off committed once, with a larger fence each time. Requests go
// through followers, so the forwarded request stays open while it waits.
func TestCluster_WaitersGetLockInFIFOOrder(t *testing.T) {
	nodes, leader, c := startLedCluster(t, 3)
	fs := followers(nodes, leader)
	r := c.acquire(leader.HTTPAddr(), "q", "a", time.Minute, 0)
	mustStatus(t, r, http.StatusOK, "acquire")
	lastFence := r.num("fence")

	owners := []string{"b", "c", "d"}
	results := make(chan waitResult, len(owners))
	for i, o := range owners {
		go func() { results <- waitResult{o, c.acquire(fs[i%2].HTTPAddr(), "q", o, time.Minute, 20*time.Second)} }()
		waitFor(t, 5*time.Second, o+" to queue", func() bool { return c.get(leader.HTTPAddr(), "q").num("waiters") == int64(i+1) })
	}
	holder := "a"
	for _, want := range owners {
		mustRelease(t, c, fs[0].HTTPAddr(), "q", holder)
		got := <-results
		if got.owner != want {
			t.Fatalf("%s got the key, want %s (FIFO)", got.owner, want)
		}
		mustStatus(t, got.r, http.StatusOK, "waiting acquire of "+want)
		if f := got.r.num("fence"); f <= lastFence {
			t.Fatalf("hand-off fence %d is not above %d", f, lastFence)
		} else {
			lastFence = f
		}
		g := c.get(fs[1].HTTPAddr(), "q")
		if g.str("owner") != want || g.num("fence") != lastFence {
			t.Fatalf("lock after hand-off = %s, want %s with fence %d", g.Raw, want, lastFence)
		}
		holder = want
	}
}

// A wait that runs out is answered 409 when wait_ms has passed, neither
// before nor a commit or two later: the client counts on the answer
// inside the margin it leaves before its own deadline. Its queue place is
// given up just after the answer (the clean-up commits then), and nothing
// of it is left.
func TestCluster_WaitTimeoutAnswers409AndLeavesNoWaiter(t *testing.T) {
	nodes := startCluster(t, 1, nil)
	addr := nodes[0].HTTPAddr()
	c := newClient(t)
	mustStatus(t, c.acquire(addr, "k", "a", time.Minute, 0), http.StatusOK, "acquire")
	const wait = 300 * time.Millisecond
	start := time.Now()
	r := c.acquire(addr, "k", "b", time.Minute, wait)
	mustStatus(t, r, http.StatusConflict, "waiting acquire that times out")
	if waited := time.Since(start); waited < wait || waited > wait+2*time.Second {
		t.Fatalf("answered after %s; want when wait_ms (%v) has passed", waited, wait)
	}
	waitFor(t, 5*time.Second, "the timed-out waiter to leave the queue", func() bool {
		return c.get(addr, "k").num("waiters") == 0 && nodes[0].waits.Listening() == 0
	})
	if g := c.get(addr, "k"); g.str("owner") != "a" {
		t.Fatalf("lock after the timeout = %s", g.Raw)
	}
	if live, _ := nodes[0].waits.Live("k", "b"); live != 0 {
		t.Fatalf("%d requests of b still live", live)
	}
}

// An expiry hands the key to the first waiter in the same entry.
func TestCluster_ExpiryHandsOffToWaiter(t *testing.T) {
	nodes := startCluster(t, 1, nil)
	addr := nodes[0].HTTPAddr()
	c := newClient(t)
	r := c.acquire(addr, "k", "a", 300*time.Millisecond, 0)
	mustStatus(t, r, http.StatusOK, "acquire")
	start := time.Now()
	w := c.acquire(addr, "k", "b", time.Minute, 10*time.Second)
	mustStatus(t, w, http.StatusOK, "waiting acquire")
	if w.num("fence") <= r.num("fence") {
		t.Fatalf("hand-off fence %d is not above %d", w.num("fence"), r.num("fence"))
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("the hand-off took %s", waited)
	}
	if rel := c.release(addr, "k", "a"); rel.Status != http.StatusOK || rel.flag("released") {
		t.Fatalf("late release by the expired holder = %d %s", rel.Status, rel.Raw)
	}
	if g := c.get(addr, "k"); g.str("owner") != "b" {
		t.Fatalf("a late release by the expired holder changed the lock: %s", g.Raw)
	}
	m := c.do(addr, "GET", "/metrics", nil)
	if !containsLine(m.Raw, `zerotal_lock_expired_total{node="n1"} 1`) {
		t.Fatalf("expiry not counted:\n%s", m.Raw)
	}
}

// When the hand-off and the wait timeout cross, the server releases the
// grant it could not deliver: the timed-out owner never keeps the key.
func TestCluster_HandoffRacingWaitTimeoutIsReleased(t *testing.T) {
	nodes := startCluster(t, 1, nil)
	addr := nodes[0].HTTPAddr()
	c := newClient(t)
	for i := 0; i < 5; i++ {
		mustStatus(t, c.acquire(addr, "race", "a", 200*time.Millisecond, 0), http.StatusOK, "acquire")
		r := c.acquire(addr, "race", "b", time.Minute, 200*time.Millisecond)
		switch r.Status {
		case http.StatusOK:
			mustStatus(t, c.release(addr, "race", "b"), http.StatusOK, "release by b")
		case http.StatusConflict:
			// Read in the table itself: GET answers 404 for a grant past
			// its deadline whose expiry has not committed yet, though b
			// may still be queued for it (and would be handed it first).
			waitFor(t, 5*time.Second, "the key to be free of b", func() bool {
				info, ok, err := nodes[0].fsm.Get(t.Context(), "race")
				queued, qerr := nodes[0].fsm.IsQueued(t.Context(), "race", "b")
				return err == nil && qerr == nil && !queued && (!ok || info.Owner != "b")
			})
		default:
			t.Fatalf("waiting acquire = %d %s", r.Status, r.Raw)
		}
		waitFor(t, 5*time.Second, "the key to be free", func() bool {
			_, ok, err := nodes[0].fsm.Get(t.Context(), "race")
			return err == nil && !ok
		})
	}
}

// Shutdown does not wait for long waits: a waiting request forwarded by a
// follower that shuts down is answered 503 at once, and the leader removes
// the waiter.
func TestCluster_ShutdownEndsForwardedWaits(t *testing.T) {
	nodes, leader, c := startLedCluster(t, 3)
	fol := followers(nodes, leader)[0]
	mustStatus(t, c.acquire(leader.HTTPAddr(), "k", "a", time.Minute, 0), http.StatusOK, "acquire")
	done := make(chan reply, 1)
	go func() { done <- c.acquire(fol.HTTPAddr(), "k", "b", time.Minute, time.Minute) }()
	waitFor(t, 5*time.Second, "b to queue", func() bool { return c.get(leader.HTTPAddr(), "k").num("waiters") == 1 })
	start := time.Now()
	shutdown(t, fol)
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("shutdown took %s", took)
	}
	r := <-done
	mustStatus(t, r, http.StatusServiceUnavailable, "waiting request on a node that shut down")
	waitFor(t, 5*time.Second, "the leader to remove the waiter", func() bool { return c.get(leader.HTTPAddr(), "k").num("waiters") == 0 })
}

// A key past its deadline with waiters goes to the first waiter, also when
// a newcomer asks before the expiry loop has acted: the leader commits the
// expiry (the hand-off) right before the newcomer's acquire.
func TestCluster_ExpiredKeyGoesToWaiterNotNewcomer(t *testing.T) {
	nodes := startCluster(t, 1, nil)
	n := nodes[0]
	addr := n.HTTPAddr()
	c := newClient(t)
	n.expiry.Pause(true)
	mustStatus(t, c.acquire(addr, "k", "a", 200*time.Millisecond, 0), http.StatusOK, "acquire")
	done := make(chan reply, 1)
	go func() { done <- c.acquire(addr, "k", "b", time.Minute, 20*time.Second) }()
	waitFor(t, 5*time.Second, "b to queue", func() bool { return c.get(addr, "k").num("waiters") == 1 })
	waitFor(t, 10*time.Second, "a's deadline to pass", func() bool { return c.get(addr, "k").Status == http.StatusNotFound })

	r := c.acquire(addr, "k", "newcomer", time.Minute, 0)
	mustStatus(t, r, http.StatusConflict, "newcomer while b waits")
	mustStatus(t, <-done, http.StatusOK, "b's wait")
	if g := c.get(addr, "k"); g.str("owner") != "b" {
		t.Fatalf("lock = %s, want b", g.Raw)
	}
}

// A retried waiting acquire of an owner already queued (the client timed
// out, say, while its first request still waits) commits nothing new: it
// waits on the queue entry the first request made, and both get the
// hand-off.
func TestCluster_RetriedWaitDoesNotCommitAgain(t *testing.T) {
	// No time-only ticks: the test counts log entries.
	nodes := startCluster(t, 1, func(c *Config) { c.TickInterval = time.Hour })
	n := nodes[0]
	addr := n.HTTPAddr()
	c := newClient(t)
	mustStatus(t, c.acquire(addr, "k", "a", time.Minute, 0), http.StatusOK, "acquire")
	results := make(chan reply, 2)
	go func() { results <- c.acquire(addr, "k", "b", time.Minute, 20*time.Second) }()
	waitFor(t, 5*time.Second, "b to be queued", func() bool { return isWaiter(n, "k", "b") })
	before := n.raft.LastIndex()

	go func() { results <- c.acquire(addr, "k", "b", time.Minute, 20*time.Second) }()
	waitFor(t, 5*time.Second, "the retry to wait", func() bool { return n.waits.Listening() == 2 })
	if after := n.raft.LastIndex(); after != before {
		t.Fatalf("the retry committed %d entries, want none", after-before)
	}
	mustRelease(t, c, addr, "k", "a")
	first, second := <-results, <-results
	mustStatus(t, first, http.StatusOK, "waiting acquire")
	mustStatus(t, second, http.StatusOK, "retried waiting acquire")
	g := c.get(addr, "k")
	if g.str("owner") != "b" || first.num("fence") != g.num("fence") || second.num("fence") != g.num("fence") {
		t.Fatalf("lock after the hand-off = %s; the requests got %s and %s", g.Raw, first.Raw, second.Raw)
	}
}

// The engine hands the key to a waiter one step before the node hears of
// it (onApply runs once the engine has applied the whole batch). A wait
// that times out in between must still see the hand-off: its clean-up
// waits for every entry the engine applied to be delivered, finds the
// grant nobody returned, and releases it. Without that wait the waiter
// was no longer queued and had no grant yet, so the clean-up did nothing,
// and the owner that was answered 409 kept the key for its whole TTL.
func TestCluster_HandoffDeliveredAfterTheWaitTimedOutIsReleased(t *testing.T) {
	nodes := startCluster(t, 1, nil)
	n, addr := nodes[0], nodes[0].HTTPAddr()
	c := newClient(t)
	mustStatus(t, c.acquire(addr, "k", "a", time.Minute, 0), http.StatusOK, "acquire by a")

	reached, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hook := func(a fsm.Applied) {
		if h := a.Result.Handoffs; len(h) == 1 && h[0].Owner == "b" {
			once.Do(func() { close(reached) })
			<-release
		}
	}
	n.applyHook.Store(&hook)
	defer n.applyHook.Store(nil)

	answer := make(chan reply, 1)
	go func() { answer <- c.acquire(addr, "k", "b", time.Minute, 300*time.Millisecond) }()
	waitFor(t, 5*time.Second, "b to be queued", func() bool { return isWaiter(n, "k", "b") })
	released := make(chan reply, 1)
	go func() { released <- c.release(addr, "k", "a") }() // answered once the hook lets go
	<-reached                                             // the engine has handed the key to b; the node has not heard yet
	var r reply
	waitFor(t, 5*time.Second, "b's wait to time out and clean up", func() bool {
		select {
		case r = <-answer:
			return true
		default:
			_, cleaning := n.waits.Live("k", "b")
			return cleaning
		}
	})
	close(release)
	if r.Status == 0 {
		r = <-answer
	}
	mustStatus(t, r, http.StatusConflict, "the wait that timed out")
	mustStatus(t, <-released, http.StatusOK, "release by a")
	waitFor(t, 5*time.Second, "the key to be free of b", func() bool {
		return c.get(addr, "k").Status == http.StatusNotFound
	})
}
