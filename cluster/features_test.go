package cluster

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func acquireShared(c *apiClient, addr, key, owner string, body map[string]any) reply {
	c.t.Helper()
	b := map[string]any{"key": key, "owner": owner, "ttl_ms": time.Minute.Milliseconds()}
	for k, v := range body {
		b[k] = v
	}
	return c.do(addr, "POST", "/v1/acquire-shared", b)
}

// A leader writes no acquire-shared entry while a member says it runs an
// older release (which would stop on it): the request is answered 501,
// naming the member, and nothing is written; once the member says it
// applies them, the same request is served.
func TestCluster_SharedWaitsForEveryMember(t *testing.T) {
	nodes := startCluster(t, 3, nil)
	leader := waitLeader(t, nodes)
	var old *Node
	for _, n := range nodes {
		if n != leader {
			old = n
			break
		}
	}
	old.olderRelease.Store(true)
	c := newClient(t)
	before := leader.raft.LastIndex()
	r := acquireShared(c, leader.HTTPAddr(), "pool", "o1", map[string]any{"semaphore": 2})
	if r.Status != http.StatusNotImplemented || r.str("code") != "unsupported" || !strings.Contains(r.str("message"), old.cfg.ID) {
		t.Fatalf("acquire-shared with an older member: %d %s; want 501 unsupported naming %s", r.Status, r.Raw, old.cfg.ID)
	}
	if after := leader.raft.LastIndex(); after != before {
		t.Fatalf("the refused request wrote to the log (%d -> %d)", before, after)
	}
	old.olderRelease.Store(false) // upgraded
	r = acquireShared(c, leader.HTTPAddr(), "pool", "o1", map[string]any{"semaphore": 2})
	mustStatus(t, r, http.StatusOK, "acquire-shared once every member applies it")
	// A follower forwards it, and the second slot is taken there.
	mustStatus(t, acquireShared(c, old.HTTPAddr(), "pool", "o2", map[string]any{"semaphore": 2}), http.StatusOK, "the second slot, through a follower")
	if r := acquireShared(c, old.HTTPAddr(), "pool", "o3", map[string]any{"semaphore": 2}); r.Status != http.StatusConflict {
		t.Fatalf("a third holder of a semaphore of 2: %d %s", r.Status, r.Raw)
	}
	got := c.get(leader.HTTPAddr(), "pool")
	if holders, _ := got.Body["holders"].([]any); got.str("kind") != "semaphore" || len(holders) != 2 {
		t.Fatalf("GET /v1/lock of the semaphore: %s", got.Raw)
	}
}

// A node of an older release is not let into a cluster whose members
// apply semaphores.
func TestCluster_JoinRefusesAnOlderRelease(t *testing.T) {
	n1 := startCluster(t, 1, nil)[0]
	cfg := testConfig(t, "n2")
	cfg.BootstrapSelf = false
	n2 := startNode(t, cfg)
	n2.olderRelease.Store(true)
	c := newClient(t)
	r := c.do(n1.HTTPAddr(), "POST", "/v1/join", map[string]any{"id": "n2", "addr": n2.RaftAddr(), "http": n2.HTTPAddr()})
	if r.Status != http.StatusConflict || r.str("code") != "join_refused" || !strings.Contains(r.str("message"), "older release") {
		t.Fatalf("join of an older release: %d %s", r.Status, r.Raw)
	}
}

// A new leader cancels the queued waiters of the old one's requests. For a
// shared key it cancels them from the tail: cancelling the head first would
// let the waiters behind it in (readers behind a waiting writer), and the
// grants would go to requests nobody waits for any more, blocking the key
// for their TTL.
func TestCluster_TakeoverCancelsSharedWaitersWithoutLettingThemIn(t *testing.T) {
	cfg := testConfig(t, "n1")
	n := startNode(t, cfg)
	waitLeader(t, []*Node{n})
	c := newClient(t)
	addr := n.HTTPAddr()
	mustStatus(t, acquireShared(c, addr, "doc", "holder", map[string]any{"mode": "read"}), http.StatusOK, "the first reader")
	// A writer queues behind the reader, then two readers behind the writer.
	queued := func(want int) func() bool {
		return func() bool {
			q, _ := c.get(addr, "doc").Body["queue"].([]any)
			return len(q) == want
		}
	}
	for i, w := range []struct{ owner, mode string }{{"a-writer", "write"}, {"b-reader", "read"}, {"c-reader", "read"}} {
		go func() {
			_ = acquireShared(c, addr, "doc", w.owner, map[string]any{"mode": w.mode, "wait_ms": 60_000})
		}()
		waitFor(t, 10*time.Second, w.owner+" queued", queued(i+1))
	}
	shutdown(t, n)
	n = startNode(t, cfg) // the same data dir: the queue comes back from the log
	waitLeader(t, []*Node{n})
	got := c.get(n.HTTPAddr(), "doc")
	holders, _ := got.Body["holders"].([]any)
	if q, _ := got.Body["queue"].([]any); len(holders) != 1 || len(q) != 0 {
		t.Fatalf("after the takeover: %s; want the first reader alone and nobody queued", got.Raw)
	}
}
