package cluster

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
)

// These tests force the interleavings of a waiting acquire that is
// abandoned (its client timed out or went away) while the same owner
// retries it, as client.Client does on failover. The abandoned request's
// cancel-wait is held before it enters raft, so the hand-off, the retry
// and the cancel commit in the order each test names.

// cancelGate holds every cancel-wait proposal of one (key, owner) until
// opened, and reports when the first one is held.
type cancelGate struct {
	key, owner string
	held       chan struct{} // closed when a cancel is held
	open       chan struct{} // closed to let it through
	once       sync.Once
	openOnce   sync.Once
}

func holdCancels(t *testing.T, n *Node, key, owner string) *cancelGate {
	g := &cancelGate{key: key, owner: owner, held: make(chan struct{}), open: make(chan struct{})}
	hook := func(e fsm.Entry) error {
		if e.Op == engine.OpCancelWait && e.Key == key && e.Owner == owner {
			g.once.Do(func() { close(g.held) })
			<-g.open
		}
		return nil
	}
	n.proposeHook.Store(&hook)
	t.Cleanup(func() { g.release(); n.proposeHook.Store(nil) })
	return g
}

func (g *cancelGate) waitHeld(t *testing.T) {
	t.Helper()
	select {
	case <-g.held:
	case <-time.After(10 * time.Second):
		t.Fatalf("no cancel-wait of %s/%s was proposed", g.key, g.owner)
	}
}

func (g *cancelGate) release() { g.openOnce.Do(func() { close(g.open) }) }

// startAbandonedWait has "a" hold key and owner "b" wait for it with a
// short wait_ms, and returns once b's wait has timed out and its
// cancel-wait is held. The abandoned request's reply arrives on the
// returned channel once the cancel is let through.
func startAbandonedWait(t *testing.T, n *Node, c *apiClient, key string) (*cancelGate, chan reply) {
	t.Helper()
	addr := n.HTTPAddr()
	mustStatus(t, c.acquire(addr, key, "a", time.Minute, 0), http.StatusOK, "acquire by a")
	gate := holdCancels(t, n, key, "b")
	first := make(chan reply, 1)
	go func() { first <- c.acquire(addr, key, "b", time.Minute, 300*time.Millisecond) }()
	gate.waitHeld(t)
	return gate, first
}

// liveRequests is how many requests of (key, owner) the leader serves.
func liveCount(n *Node, key, owner string) int {
	live, _ := n.waits.Live(key, owner)
	return live
}

// Order 1: the retry waits, the hand-off commits, then the abandoned
// request's cancel (which finds nothing to cancel). The retry answers
// 200, so owner b must hold the key afterwards.
func TestCluster_RetriedWait_HandoffBeforeCancel_RetryWaiting(t *testing.T) {
	n := startCluster(t, 1, nil)[0]
	c := newClient(t)
	addr := n.HTTPAddr()
	gate, first := startAbandonedWait(t, n, c, "k")

	retry := make(chan reply, 1)
	go func() { retry <- c.acquire(addr, "k", "b", time.Minute, 20*time.Second) }()
	waitFor(t, 5*time.Second, "the retry to be served", func() bool { return liveCount(n, "k", "b") == 2 })
	if rel := c.release(addr, "k", "a"); !rel.flag("released") {
		t.Fatalf("release by a = %s", rel.Raw)
	}
	waitFor(t, 5*time.Second, "the hand-off to b", func() bool { return c.get(addr, "k").str("owner") == "b" })
	gate.release()

	r := <-retry
	mustStatus(t, r, http.StatusOK, "retried waiting acquire")
	<-first
	assertHeldBy(t, c, addr, "k", "b", r.num("fence"))
}

// Order 2: the hand-off commits, then the retry arrives (b is no longer
// a waiter, so the retry refreshes b's grant), then the abandoned
// request's cancel.
func TestCluster_RetriedWait_HandoffBeforeRetry(t *testing.T) {
	n := startCluster(t, 1, nil)[0]
	c := newClient(t)
	addr := n.HTTPAddr()
	gate, first := startAbandonedWait(t, n, c, "k")

	if rel := c.release(addr, "k", "a"); !rel.flag("released") {
		t.Fatalf("release by a = %s", rel.Raw)
	}
	waitFor(t, 5*time.Second, "the hand-off to b", func() bool { return c.get(addr, "k").str("owner") == "b" })
	retry := make(chan reply, 1)
	go func() { retry <- c.acquire(addr, "k", "b", time.Minute, 0) }()
	// The retry may answer before the cancel commits, or be held until
	// the abandoned request has settled: either is correct, so wait for
	// whichever comes first.
	var r reply
	answered := false
	waitFor(t, 5*time.Second, "the retry to be served", func() bool {
		select {
		case r = <-retry:
			answered = true
			return true
		default:
			return liveCount(n, "k", "b") == 2
		}
	})
	gate.release()
	if !answered {
		r = <-retry
	}
	mustStatus(t, r, http.StatusOK, "retried acquire")
	<-first
	assertHeldBy(t, c, addr, "k", "b", r.num("fence"))
}

// Order 3 (liveness): the cancel commits before the hand-off. The retry
// must not wait on the queue entry the cancel removed: it queues again
// and gets the key when a releases.
func TestCluster_RetriedWait_CancelBeforeHandoff(t *testing.T) {
	n := startCluster(t, 1, nil)[0]
	c := newClient(t)
	addr := n.HTTPAddr()
	gate, first := startAbandonedWait(t, n, c, "k")

	retry := make(chan reply, 1)
	go func() { retry <- c.acquire(addr, "k", "b", time.Minute, 8*time.Second) }()
	waitFor(t, 5*time.Second, "the retry to be served", func() bool { return liveCount(n, "k", "b") == 2 })
	gate.release()
	mustStatus(t, <-first, http.StatusConflict, "abandoned wait")
	waitFor(t, 5*time.Second, "b to be queued again", func() bool { return isWaiter(n, "k", "b") })
	start := time.Now()
	if rel := c.release(addr, "k", "a"); !rel.flag("released") {
		t.Fatalf("release by a = %s", rel.Raw)
	}
	r := <-retry
	mustStatus(t, r, http.StatusOK, "retried waiting acquire")
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("the retry got the key %s after the release", took)
	}
	assertHeldBy(t, c, addr, "k", "b", r.num("fence"))
}

// A cancel-wait that fails for a reason other than a leader change is
// retried: no orphan waiter is left for the next hand-off to grant to
// nobody.
func TestCluster_FailedCancelWaitIsRetried(t *testing.T) {
	n := startCluster(t, 1, nil)[0]
	c := newClient(t)
	addr := n.HTTPAddr()
	mustStatus(t, c.acquire(addr, "k", "a", time.Minute, 0), http.StatusOK, "acquire by a")
	var mu sync.Mutex
	failures := 0
	hook := func(e fsm.Entry) error {
		if e.Op != engine.OpCancelWait {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		if failures < 2 {
			failures++
			return errors.New("injected: disk full")
		}
		return nil
	}
	n.proposeHook.Store(&hook)
	t.Cleanup(func() { n.proposeHook.Store(nil) })

	mustStatus(t, c.acquire(addr, "k", "b", time.Minute, 200*time.Millisecond), http.StatusConflict, "waiting acquire that times out")
	waitFor(t, 5*time.Second, "b's queue entry to be cancelled", func() bool { return !isWaiter(n, "k", "b") })
	if rel := c.release(addr, "k", "a"); !rel.flag("released") {
		t.Fatalf("release by a = %s", rel.Raw)
	}
	if g := c.get(addr, "k"); g.Status != http.StatusNotFound {
		t.Fatalf("after the release the key is %s; the abandoned waiter was granted it", g.Raw)
	}
}

// assertHeldBy checks that owner holds key with fence, and that nobody
// else can take it.
func assertHeldBy(t *testing.T, c *apiClient, addr, key, owner string, fence int64) {
	t.Helper()
	g := c.get(addr, key)
	if g.str("owner") != owner || g.num("fence") != fence {
		t.Fatalf("%s answered 200 with fence %d, but the lock is %s", owner, fence, g.Raw)
	}
	if r := c.acquire(addr, key, "c", time.Minute, 0); r.Status != http.StatusConflict {
		t.Fatalf("a third owner's acquire of a key %s holds = %d %s: double grant", owner, r.Status, r.Raw)
	}
}

// An abandoned wait whose owner's other live request is not a wait (an
// acquire without wait_ms, answered 409 since a holds the key) must
// still leave no queue entry behind: whichever of the two leaves last
// cancels it. Otherwise the next hand-off grants the key to nobody.
func TestCluster_AbandonedWaitBesideNonWaitingAcquire(t *testing.T) {
	n := startCluster(t, 1, nil)[0]
	c := newClient(t)
	addr := n.HTTPAddr()
	mustStatus(t, c.acquire(addr, "k", "a", time.Minute, 0), http.StatusOK, "acquire by a")

	// b's acquire without wait is held before raft while b's wait is
	// abandoned.
	held, open := make(chan struct{}), make(chan struct{})
	var once, openOnce sync.Once
	hook := func(e fsm.Entry) error {
		if key, ok := mutexKey(e); ok && !e.Wait && key == "k" && e.Owner == "b" {
			once.Do(func() { close(held) })
			<-open
		}
		return nil
	}
	n.proposeHook.Store(&hook)
	letGo := func() { openOnce.Do(func() { close(open) }) }
	t.Cleanup(func() { letGo(); n.proposeHook.Store(nil) })

	// The waiting request's client goes away when the test says so.
	ctx, abandon := context.WithCancel(t.Context())
	defer abandon()
	waitDone := make(chan struct{})
	go func() {
		defer close(waitDone)
		body := `{"key":"k","owner":"b","ttl_ms":60000,"wait_ms":30000}`
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+addr+"/v1/acquire", strings.NewReader(body))
		if resp, err := c.http.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	waitFor(t, 5*time.Second, "b to be queued", func() bool { return isWaiter(n, "k", "b") })

	now := make(chan reply, 1)
	go func() { now <- c.acquire(addr, "k", "b", time.Minute, 0) }()
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("b's acquire without wait was never proposed")
	}
	abandon()
	<-waitDone
	waitFor(t, 5*time.Second, "the abandoned wait to leave", func() bool { return liveCount(n, "k", "b") == 1 })
	letGo()
	mustStatus(t, <-now, http.StatusConflict, "acquire without wait")

	waitFor(t, 5*time.Second, "b's queue entry to be cancelled", func() bool { return !isWaiter(n, "k", "b") })
	if rel := c.release(addr, "k", "a"); !rel.flag("released") {
		t.Fatalf("release by a = %s", rel.Raw)
	}
	if g := c.get(addr, "k"); g.Status != http.StatusNotFound {
		t.Fatalf("after the release the key is %s; the abandoned waiter was granted it", g.Raw)
	}
}
