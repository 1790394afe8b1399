package cluster

import (
	"net/http"
	"testing"
	"time"
)

func (c *apiClient) acquireAll(addr string, keys []string, owner string, ttl, wait time.Duration) reply {
	return c.do(addr, "POST", "/v1/acquire", map[string]any{"keys": keys, "owner": owner, "ttl_ms": ttl.Milliseconds(), "wait_ms": wait.Milliseconds()})
}

// An acquire-all that waits keeps its place on every key from the moment
// it comes: with "a" held, it takes "b" at once and queues for "a", so a
// later acquire of "b" waits behind it; it is answered once "a" is
// handed to it, and the later request only when it lets "b" go.
func TestCluster_AcquireAllWaitsFirstComeFirstServedForTheSet(t *testing.T) {
	nodes := startCluster(t, 3, nil)
	leader := waitLeader(t, nodes)
	addr := leader.HTTPAddr()
	c := newClient(t)
	mustStatus(t, c.acquire(addr, "a", "h", time.Minute, 0), http.StatusOK, "acquire a")

	set := make(chan reply, 1)
	go func() { set <- c.acquireAll(addr, []string{"b", "a"}, "set", time.Minute, 20*time.Second) }()
	waitFor(t, 10*time.Second, "the set to queue for a", func() bool { return isWaiter(leader, "a", "set") })
	if got := c.get(addr, "b"); got.str("owner") != "set" {
		t.Fatalf("b while the set waits for a: %s; want the set's", got.Raw)
	}
	later := make(chan reply, 1)
	go func() { later <- c.acquire(addr, "b", "later", time.Minute, 20*time.Second) }()
	waitFor(t, 10*time.Second, "the later acquire to queue for b", func() bool { return isWaiter(leader, "b", "later") })

	mustStatus(t, c.release(addr, "a", "h"), http.StatusOK, "release a")
	r := <-set
	mustStatus(t, r, http.StatusOK, "the set, once a is handed to it")
	locks, _ := r.Body["locks"].([]any)
	if len(locks) != 2 {
		t.Fatalf("the set's answer: %s", r.Raw)
	}
	select {
	case r := <-later:
		t.Fatalf("the later acquire of b was answered while the set holds it: %d %s", r.Status, r.Raw)
	default:
	}
	mustStatus(t, c.release(addr, "b", "set"), http.StatusOK, "the set releases b")
	mustStatus(t, <-later, http.StatusOK, "the later acquire, once the set let b go")
}

// While it waits, an acquire-all keeps the keys it took alive past their
// TTL; when its wait passes it is told which key it waited for and who
// holds it, and keeps none of the keys.
func TestCluster_AcquireAllWaitKeepsItsKeysAliveAndLeavesNothingOnTimeout(t *testing.T) {
	nodes := startCluster(t, 1, nil)
	n, addr := nodes[0], nodes[0].HTTPAddr()
	c := newClient(t)
	holder := "0123456789abcdef0123456789abcdef:deploy@host-3"
	mustStatus(t, c.acquire(addr, "a", holder, time.Minute, 0), http.StatusOK, "acquire a")

	const ttl = 600 * time.Millisecond
	done := make(chan reply, 1)
	go func() { done <- c.acquireAll(addr, []string{"c", "a"}, "set", ttl, 5*time.Second) }()
	waitFor(t, 5*time.Second, "the set to queue for a", func() bool { return isWaiter(n, "a", "set") })
	first := c.get(addr, "c")
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(3 * ttl); time.Now().Before(end); <-tick.C {
		if got := c.get(addr, "c"); got.str("owner") != "set" || got.Body["fence"] != first.Body["fence"] {
			t.Fatalf("c while the set waits for a, past its TTL: %s; was %s", got.Raw, first.Raw)
		}
	}
	mustStatus(t, c.release(addr, "a", holder), http.StatusOK, "release a")
	r := <-done
	mustStatus(t, r, http.StatusOK, "the set")
	locks, _ := r.Body["locks"].([]any)
	if l, _ := locks[0].(map[string]any); l["fence"] != first.Body["fence"] {
		t.Fatalf("c's fence in the answer %v; it was taken with %v", l["fence"], first.Body["fence"])
	}
	mustStatus(t, c.release(addr, "c", "set"), http.StatusOK, "release c")
	mustStatus(t, c.release(addr, "a", "set"), http.StatusOK, "release a")

	mustStatus(t, c.acquire(addr, "a", holder, time.Minute, 0), http.StatusOK, "acquire a again")
	r = c.acquireAll(addr, []string{"d", "a"}, "late", time.Minute, 300*time.Millisecond)
	if r.Status != http.StatusConflict || r.str("key") != "a" || r.str("holder") != "deploy@host-3" {
		t.Fatalf("an acquire-all whose wait passed: %d %s; want 409 naming a and its holder", r.Status, r.Raw)
	}
	if got := c.get(addr, "d"); got.Status != http.StatusNotFound {
		t.Fatalf("d after the wait passed: %d %s; want free", got.Status, got.Raw)
	}
	if isWaiter(n, "a", "late") {
		t.Fatal("the timed-out request is still queued for a")
	}
}

// A client that retries an acquire-all with the same owner while the
// first request still waits (after a timeout on its side, or through
// another node) does not queue twice: the retry waits on the same
// places, and both requests are answered with the same fences once the
// last key comes.
func TestCluster_AcquireAllRetriedWhileQueuedWaitsOnTheSamePlaces(t *testing.T) {
	nodes := startCluster(t, 1, nil)
	n, addr := nodes[0], nodes[0].HTTPAddr()
	c := newClient(t)
	mustStatus(t, c.acquire(addr, "a", "h", time.Minute, 0), http.StatusOK, "acquire a")
	first, retry := make(chan reply, 1), make(chan reply, 1)
	go func() { first <- c.acquireAll(addr, []string{"b", "a"}, "set", time.Minute, 20*time.Second) }()
	waitFor(t, 10*time.Second, "the first request to queue for a", func() bool { return isWaiter(n, "a", "set") })
	go func() { retry <- c.acquireAll(addr, []string{"b", "a"}, "set", time.Minute, 20*time.Second) }()
	waitFor(t, 10*time.Second, "the retry to be live", func() bool { live, _ := n.waits.Live("a", "set"); return live == 2 })
	if info, ok, err := n.fsm.Get(t.Context(), "a"); err != nil || !ok || info.Waiters != 1 {
		t.Fatalf("a's queue with the retry live: %+v %v %v; want the one place", info, ok, err)
	}
	mustStatus(t, c.release(addr, "a", "h"), http.StatusOK, "release a")
	r1, r2 := <-first, <-retry
	mustStatus(t, r1, http.StatusOK, "the first request")
	mustStatus(t, r2, http.StatusOK, "the retry")
	if r1.Raw != r2.Raw {
		t.Fatalf("the two answers differ: %s and %s", r1.Raw, r2.Raw)
	}
	for _, k := range []string{"a", "b"} {
		if got := c.get(addr, k); got.str("owner") != "set" {
			t.Fatalf("%s after both answers: %s; want the set's", k, got.Raw)
		}
	}
}
