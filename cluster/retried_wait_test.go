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

// proposalGate holds every proposal it matches until opened, and reports
// when the first one is held.
type proposalGate struct {
	what     string
	held     chan struct{} // closed when a proposal is held
	open     chan struct{} // closed to let it through
	once     sync.Once
	openOnce sync.Once
}

// holdProposals holds n's proposals of entries that match, named what.
func holdProposals(t *testing.T, n *Node, what string, match func(fsm.Entry) bool) *proposalGate {
	g := &proposalGate{what: what, held: make(chan struct{}), open: make(chan struct{})}
	hook := func(e fsm.Entry) error {
		if match(e) {
			g.once.Do(func() { close(g.held) })
			<-g.open
		}
		return nil
	}
	n.proposeHook.Store(&hook)
	t.Cleanup(func() { g.release(); n.proposeHook.Store(nil) })
	return g
}

func (g *proposalGate) waitHeld(t *testing.T) {
	t.Helper()
	select {
	case <-g.held:
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s was proposed", g.what)
	}
}

func (g *proposalGate) release() { g.openOnce.Do(func() { close(g.open) }) }

// abandonedWait is a one-node cluster where "a" holds "k" and owner "b"
// waited for it with a short wait_ms that timed out, its cancel-wait held
// by gate. The abandoned request's reply arrives on first once the cancel
// is let through.
type abandonedWait struct {
	n     *Node
	c     *apiClient
	addr  string
	gate  *proposalGate
	first chan reply
}

func startAbandonedWait(t *testing.T) *abandonedWait {
	t.Helper()
	n := startCluster(t, 1, nil)[0]
	w := &abandonedWait{n: n, c: newClient(t), addr: n.HTTPAddr(), first: make(chan reply, 1)}
	mustStatus(t, w.c.acquire(w.addr, "k", "a", time.Minute, 0), http.StatusOK, "acquire by a")
	w.gate = holdProposals(t, n, "cancel-wait of k/b", func(e fsm.Entry) bool {
		return e.Op == engine.OpCancelWait && e.Key == "k" && e.Owner == "b"
	})
	go func() { w.first <- w.c.acquire(w.addr, "k", "b", time.Minute, 300*time.Millisecond) }()
	w.gate.waitHeld(t)
	return w
}

// retry sends b's acquire again, waiting up to wait; the answer arrives
// on the channel.
func (w *abandonedWait) retry(wait time.Duration) chan reply {
	retry := make(chan reply, 1)
	go func() { retry <- w.c.acquire(w.addr, "k", "b", time.Minute, wait) }()
	return retry
}

// waitRetryServed waits until the leader serves both of b's requests.
func (w *abandonedWait) waitRetryServed(t *testing.T) {
	t.Helper()
	waitFor(t, 5*time.Second, "the retry to be served", func() bool { return liveCount(w.n, "k", "b") == 2 })
}

// liveCount is how many requests of (key, owner) the leader serves.
func liveCount(n *Node, key, owner string) int {
	live, _ := n.waits.Live(key, owner)
	return live
}

// mustRelease releases owner's grant of key, which it must hold.
func mustRelease(t *testing.T, c *apiClient, addr, key, owner string) {
	t.Helper()
	if rel := c.release(addr, key, owner); !rel.flag("released") {
		t.Fatalf("release by %s = %s", owner, rel.Raw)
	}
}

// Order 1: the retry waits, the hand-off commits, then the abandoned
// request's cancel (which finds nothing to cancel). The retry answers
// 200, so owner b must hold the key afterwards.
func TestCluster_RetriedWait_HandoffBeforeCancel_RetryWaiting(t *testing.T) {
	w := startAbandonedWait(t)
	retry := w.retry(20 * time.Second)
	w.waitRetryServed(t)
	mustRelease(t, w.c, w.addr, "k", "a")
	waitFor(t, 5*time.Second, "the hand-off to b", func() bool { return w.c.get(w.addr, "k").str("owner") == "b" })
	w.gate.release()

	r := <-retry
	mustStatus(t, r, http.StatusOK, "retried waiting acquire")
	<-w.first
	assertHeldBy(t, w.c, w.addr, "k", "b", r.num("fence"))
}

// Order 2: the hand-off commits, then the retry arrives (b is no longer
// a waiter, so the retry refreshes b's grant), then the abandoned
// request's cancel.
func TestCluster_RetriedWait_HandoffBeforeRetry(t *testing.T) {
	w := startAbandonedWait(t)
	mustRelease(t, w.c, w.addr, "k", "a")
	waitFor(t, 5*time.Second, "the hand-off to b", func() bool { return w.c.get(w.addr, "k").str("owner") == "b" })
	retry := w.retry(0)
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
			return liveCount(w.n, "k", "b") == 2
		}
	})
	w.gate.release()
	if !answered {
		r = <-retry
	}
	mustStatus(t, r, http.StatusOK, "retried acquire")
	<-w.first
	assertHeldBy(t, w.c, w.addr, "k", "b", r.num("fence"))
}

// Order 3 (liveness): the cancel commits before the hand-off. The retry
// must not wait on the queue entry the cancel removed: it queues again
// and gets the key when a releases.
func TestCluster_RetriedWait_CancelBeforeHandoff(t *testing.T) {
	w := startAbandonedWait(t)
	retry := w.retry(8 * time.Second)
	w.waitRetryServed(t)
	w.gate.release()
	mustStatus(t, <-w.first, http.StatusConflict, "abandoned wait")
	waitFor(t, 5*time.Second, "b to be queued again", func() bool { return isWaiter(w.n, "k", "b") })
	start := time.Now()
	mustRelease(t, w.c, w.addr, "k", "a")
	r := <-retry
	mustStatus(t, r, http.StatusOK, "retried waiting acquire")
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("the retry got the key %s after the release", took)
	}
	assertHeldBy(t, w.c, w.addr, "k", "b", r.num("fence"))
}

// noOrphanWaiter checks that b's queue entry for "k" goes, so that a's
// release hands the key to nobody.
func noOrphanWaiter(t *testing.T, n *Node, c *apiClient) {
	t.Helper()
	addr := n.HTTPAddr()
	waitFor(t, 5*time.Second, "b's queue entry to be cancelled", func() bool { return !isWaiter(n, "k", "b") })
	mustRelease(t, c, addr, "k", "a")
	if g := c.get(addr, "k"); g.Status != http.StatusNotFound {
		t.Fatalf("after the release the key is %s; the abandoned waiter was granted it", g.Raw)
	}
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
	noOrphanWaiter(t, n, c)
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
	gate := holdProposals(t, n, "acquire without wait by b", func(e fsm.Entry) bool {
		key, ok := mutexKey(e)
		return ok && !e.Wait && key == "k" && e.Owner == "b"
	})

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
	gate.waitHeld(t)
	abandon()
	<-waitDone
	waitFor(t, 5*time.Second, "the abandoned wait to leave", func() bool { return liveCount(n, "k", "b") == 1 })
	gate.release()
	mustStatus(t, <-now, http.StatusConflict, "acquire without wait")
	noOrphanWaiter(t, n, c)
}
