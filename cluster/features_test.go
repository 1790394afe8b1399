package cluster

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
)

func acquireShared(c *apiClient, addr, key, owner string, body map[string]any) reply {
	c.t.Helper()
	b := map[string]any{"key": key, "owner": owner, "ttl_ms": time.Minute.Milliseconds()}
	for k, v := range body {
		b[k] = v
	}
	return c.do(addr, "POST", "/v1/acquire", b)
}

// A leader writes no acquire-shared entry while a member says it runs an
// older release (which would stop on it): the request is answered 501,
// naming the member, and nothing is written; once the member says it
// applies them, the same request is served.
func TestCluster_SharedWaitsForEveryMember(t *testing.T) {
	nodes := startCluster(t, 3, nil)
	leader := waitLeader(t, nodes)
	old := followers(nodes, leader)[0]
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

// An acquire-all is one log entry: every key or none, on every node. A
// busy key is a 409 naming it and its holder, with nothing written for the
// others; the grant goes through a follower too; and a leader writes none
// while a member says it runs an older release.
func TestCluster_AcquireAllIsOneEntry(t *testing.T) {
	nodes, leader, c := startLedCluster(t, 3)
	follower := followers(nodes, leader)[0]
	holder := "0123456789abcdef0123456789abcdef:deploy@host-3"
	mustStatus(t, c.do(leader.HTTPAddr(), "POST", "/v1/acquire", map[string]any{"key": "b", "owner": holder, "ttl_ms": 60000}), http.StatusOK, "acquire b")
	all := map[string]any{"keys": []string{"c", "a", "b"}, "owner": "me", "ttl_ms": 60000}
	r := c.do(follower.HTTPAddr(), "POST", "/v1/acquire", all)
	if r.Status != http.StatusConflict || r.str("key") != "b" || r.str("holder") != "deploy@host-3" || strings.Contains(r.Raw, "0123456789abcdef") {
		t.Fatalf("acquire-all with b held: %d %s; want 409 naming b and its holder, never its token", r.Status, r.Raw)
	}
	for _, k := range []string{"a", "c"} {
		if got := c.get(leader.HTTPAddr(), k); got.Status != http.StatusNotFound {
			t.Fatalf("%s after a refused acquire-all: %d %s", k, got.Status, got.Raw)
		}
	}
	mustStatus(t, c.do(leader.HTTPAddr(), "POST", "/v1/release", map[string]any{"key": "b", "owner": holder}), http.StatusOK, "release b")

	// Every node applies the grants together: one entry, of the three.
	var mu sync.Mutex
	applied := map[string][]engine.Op{}
	for _, n := range nodes {
		hook := func(a fsm.Applied) {
			// The refused acquire-all may still be applied on a follower
			// that lags: it granted nothing.
			if a.Entry.Owner == "me" && (a.Entry.Op != engine.OpAcquireKeys || a.Result.OK) {
				mu.Lock()
				applied[n.cfg.ID] = append(applied[n.cfg.ID], a.Entry.Op)
				mu.Unlock()
			}
		}
		n.applyHook.Store(&hook)
		defer n.applyHook.Store(nil)
	}
	r = c.do(follower.HTTPAddr(), "POST", "/v1/acquire", all)
	mustStatus(t, r, http.StatusOK, "acquire-all of free keys, through a follower")
	locks, _ := r.Body["locks"].([]any)
	if len(locks) != 3 {
		t.Fatalf("acquire-all answered %s", r.Raw)
	}
	waitFor(t, 5*time.Second, "every node to apply the acquire-all", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(applied) == len(nodes)
	})
	mu.Lock()
	for id, ops := range applied {
		if len(ops) != 1 || ops[0] != engine.OpAcquireKeys {
			t.Fatalf("node %s applied %v for the acquire-all; want one acquire_keys entry", id, ops)
		}
	}
	mu.Unlock()
	for i, k := range []string{"c", "a", "b"} {
		l, _ := locks[i].(map[string]any)
		fence, _ := l["fence"].(float64)
		got := c.get(leader.HTTPAddr(), k)
		if l["key"] != k || fence == 0 || got.str("owner") != "me" || got.Body["fence"] != fence {
			t.Fatalf("lock %d of the answer %v; GET %s: %s", i, l, k, got.Raw)
		}
	}

	for _, bad := range []map[string]any{
		{"keys": []string{}, "owner": "me", "ttl_ms": 1000},
		{"keys": []string{"x", "x"}, "owner": "me", "ttl_ms": 1000},
		{"keys": []string{"x", ""}, "owner": "me", "ttl_ms": 1000},
		{"keys": []string{"x"}, "owner": "me", "ttl_ms": 0},
	} {
		if r := c.do(leader.HTTPAddr(), "POST", "/v1/acquire", bad); r.Status != http.StatusBadRequest {
			t.Fatalf("acquire-all %v: %d %s; want 400", bad, r.Status, r.Raw)
		}
	}

	follower.olderRelease.Store(true)
	leader.featureMembers.Clear() // as a leader that has not asked yet
	mu.Lock()
	clear(applied)
	mu.Unlock()
	r = c.do(leader.HTTPAddr(), "POST", "/v1/acquire", map[string]any{"keys": []string{"d", "e"}, "owner": "me", "ttl_ms": 60000})
	if r.Status != http.StatusNotImplemented || !strings.Contains(r.str("message"), follower.cfg.ID) {
		t.Fatalf("acquire-all with an older member: %d %s; want 501 naming %s", r.Status, r.Raw, follower.cfg.ID)
	}
	// A barrier: whatever the leader wrote before it has been applied.
	if err := leader.barrier(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(applied[leader.cfg.ID]) != 0 {
		t.Fatalf("the refused acquire-all wrote to the log: %v", applied[leader.cfg.ID])
	}
}

// While a member runs an older release, a Manager's TryAll and BlockAll
// over the cluster still take their keys: the 501 makes them fall back
// to taking the keys one at a time, with nothing taken by the refused
// request.
func TestCluster_SeveralKeysFallBackWhileAMemberIsOlder(t *testing.T) {
	nodes := startCluster(t, 3, nil)
	leader := waitLeader(t, nodes)
	for _, n := range nodes {
		if n != leader {
			n.olderRelease.Store(true)
		}
	}
	cl, err := client.New(client.Config{Addrs: []string{leader.HTTPAddr()}})
	if err != nil {
		t.Fatal(err)
	}
	m := lock.New(cl)
	t.Cleanup(func() { _ = m.Close() })
	for name, call := range map[string]func(lock.MultiFunc) error{
		"TryAll":   func(fn lock.MultiFunc) error { return m.TryAll(t.Context(), []string{"x", "y"}, time.Minute, fn) },
		"BlockAll": func(fn lock.MultiFunc) error { return m.BlockAll(t.Context(), []string{"x", "y"}, time.Minute, fn) },
	} {
		ran := false
		err := call(func(ctx context.Context, locks []*lock.Lock) error {
			ran = len(locks) == 2 && locks[0].Fence() != 0 && locks[1].Fence() != 0
			return nil
		})
		if err != nil || !ran {
			t.Fatalf("%s with an older member: %v (ran with both fences: %v)", name, err, ran)
		}
	}
}
