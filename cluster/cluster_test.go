package cluster

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestCluster_AcquireOnFollowerIsForwardedToLeader(t *testing.T) {
	nodes, leader, c := startLedCluster(t, 3)
	fs := followers(nodes, leader)

	r := c.acquire(fs[0].HTTPAddr(), "jobs/nightly report", "owner-a", 10*time.Second, 0)
	mustStatus(t, r, http.StatusOK, "acquire on a follower")
	fence := r.num("fence")
	if fence <= 0 || r.str("owner") != "owner-a" || r.num("ttl_ms") != 10000 {
		t.Fatalf("acquire answer = %s", r.Raw)
	}

	// Same owner again: a refresh with the same fence.
	r = c.acquire(fs[1].HTTPAddr(), "jobs/nightly report", "owner-a", 10*time.Second, 0)
	mustStatus(t, r, http.StatusOK, "refresh")
	if r.num("fence") != fence {
		t.Fatalf("refresh fence = %d, want %d", r.num("fence"), fence)
	}

	// Another owner: 409 with the holder's remaining TTL.
	r = c.acquire(fs[1].HTTPAddr(), "jobs/nightly report", "owner-b", time.Second, 0)
	mustStatus(t, r, http.StatusConflict, "contended acquire")
	if r.str("code") != "not_acquired" || r.num("holder_ttl_ms") <= 0 || r.num("holder_ttl_ms") > 10000 {
		t.Fatalf("409 body = %s", r.Raw)
	}

	// Every node reads the same lock (reads go through the leader).
	for _, n := range nodes {
		r = c.get(n.HTTPAddr(), "jobs/nightly report")
		mustStatus(t, r, http.StatusOK, "get on "+n.ID())
		if r.str("owner") != "owner-a" || r.num("fence") != fence || r.num("remaining_ms") <= 0 {
			t.Fatalf("get on %s = %s", n.ID(), r.Raw)
		}
	}

	// A late release by the wrong owner is a no-op; the right one frees it.
	r = c.release(fs[0].HTTPAddr(), "jobs/nightly report", "owner-b")
	mustStatus(t, r, http.StatusOK, "foreign release")
	if r.flag("released") {
		t.Fatal("a foreign owner released the lock")
	}
	r = c.release(fs[0].HTTPAddr(), "jobs/nightly report", "owner-a")
	if r.Status != http.StatusOK || !r.flag("released") {
		t.Fatalf("release = %d %s", r.Status, r.Raw)
	}
	mustStatus(t, c.get(fs[1].HTTPAddr(), "jobs/nightly report"), http.StatusNotFound, "get after release")

	// The next grant has a larger fence.
	r = c.acquire(fs[1].HTTPAddr(), "jobs/nightly report", "owner-b", time.Second, 0)
	mustStatus(t, r, http.StatusOK, "acquire after release")
	if r.num("fence") <= fence {
		t.Fatalf("new fence %d is not above %d", r.num("fence"), fence)
	}
}

func TestCluster_BadInputAnswers400WithClearMessage(t *testing.T) {
	nodes := startCluster(t, 1, nil)
	addr := nodes[0].HTTPAddr()
	c := newClient(t)
	longKey := strings.Repeat("k", 1025)
	cases := []struct {
		name, method, path string
		body               any
		status             int
		code, mention      string
	}{
		{"malformed json", "POST", "/v1/acquire", `{"key":`, 400, "invalid", "body"},
		{"not an object", "POST", "/v1/acquire", `[1,2]`, 400, "invalid", "body"},
		{"empty body", "POST", "/v1/acquire", ``, 400, "invalid", "empty"},
		{"unknown field", "POST", "/v1/acquire", `{"key":"k","owner":"o","ttl_ms":10,"colour":"red"}`, 400, "invalid", "colour"},
		{"trailing data", "POST", "/v1/acquire", `{"key":"k","owner":"o","ttl_ms":10} {}`, 400, "invalid", "after"},
		{"empty key", "POST", "/v1/acquire", map[string]any{"key": "", "owner": "o", "ttl_ms": 10}, 400, "invalid", "key"},
		{"key too long", "POST", "/v1/acquire", map[string]any{"key": longKey, "owner": "o", "ttl_ms": 10}, 400, "invalid", "1025"},
		{"missing owner", "POST", "/v1/acquire", map[string]any{"key": "k", "ttl_ms": 10}, 400, "invalid", "owner"},
		{"ttl zero", "POST", "/v1/acquire", map[string]any{"key": "k", "owner": "o", "ttl_ms": 0}, 400, "invalid", "ttl_ms"},
		{"ttl over a week", "POST", "/v1/acquire", map[string]any{"key": "k", "owner": "o", "ttl_ms": 8 * 24 * 3600 * 1000}, 400, "invalid", "ttl_ms"},
		{"negative wait", "POST", "/v1/acquire", map[string]any{"key": "k", "owner": "o", "ttl_ms": 10, "wait_ms": -1}, 400, "invalid", "wait_ms"},
		{"wrong type", "POST", "/v1/acquire", `{"key":"k","owner":"o","ttl_ms":"10s"}`, 400, "invalid", "ttl_ms"},
		{"extend without ttl", "POST", "/v1/extend", map[string]any{"key": "k", "owner": "o"}, 400, "invalid", "ttl_ms"},
		{"release without owner", "POST", "/v1/release", map[string]any{"key": "k"}, 400, "invalid", "owner"},
		{"force without key", "POST", "/v1/force-release", map[string]any{}, 400, "invalid", "key"},
		{"get without key", "GET", "/v1/lock", nil, 400, "invalid", "key"},
		{"list bad limit", "GET", "/v1/locks?limit=0", nil, 400, "invalid", "limit"},
		{"body too large", "POST", "/v1/acquire", `{"key":"` + strings.Repeat("x", 70<<10) + `"}`, 413, "too_large", "bytes"},
		{"free key", "GET", "/v1/lock?key=nobody", nil, 404, "not_found", "lock"},
		{"unknown endpoint", "POST", "/v1/teleport", `{}`, 404, "not_found", "/v1/teleport"},
		{"wrong method", "GET", "/v1/acquire", nil, 405, "invalid", "POST"},
		{"join without id", "POST", "/v1/join", map[string]any{"addr": "127.0.0.1:1"}, 400, "invalid", "id"},
		{"key not utf-8", "POST", "/v1/acquire", "{\"key\":\"a\xff\",\"owner\":\"o\",\"ttl_ms\":10}", 400, "invalid", "UTF-8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := c.do(addr, tc.method, tc.path, tc.body)
			mustStatus(t, r, tc.status, tc.name)
			if r.str("code") != tc.code || !strings.Contains(r.str("message"), tc.mention) {
				t.Fatalf("body = %s, want code %q and a message mentioning %q", r.Raw, tc.code, tc.mention)
			}
		})
	}
}

// TestCluster_ForwardedTooLargeBodyHidesSockets sends an oversized body to a
// follower: the 413 must read as the leader's would, without the addresses
// of the forwarding hop.
func TestCluster_ForwardedTooLargeBodyHidesSockets(t *testing.T) {
	nodes := startCluster(t, 2, nil)
	c := newClient(t)
	for _, n := range nodes {
		if n.IsLeader() {
			continue
		}
		r := c.do(n.HTTPAddr(), "POST", "/v1/acquire", `{"key":"`+strings.Repeat("x", 70<<10)+`"}`)
		mustStatus(t, r, http.StatusRequestEntityTooLarge, "oversized body through a follower")
		if msg := r.str("message"); !strings.Contains(msg, "bytes") || strings.Contains(msg, "127.0.0.1") || strings.Contains(msg, "tcp") {
			t.Fatalf("413 message %q: want the size limit and no socket addresses", msg)
		}
		return
	}
	t.Fatal("no follower found")
}

func TestCluster_TokenIsRequired(t *testing.T) {
	nodes := startCluster(t, 2, func(c *Config) { c.Token = "s3cret-0123456789abcdef" })
	c := newClient(t)
	for _, n := range nodes {
		for _, token := range []string{"", "wrong", "S3CRET"} {
			c.token = token
			r := c.acquire(n.HTTPAddr(), "k", "o", time.Second, 0)
			mustStatus(t, r, http.StatusUnauthorized, "acquire with token "+token)
			if r.str("code") != "unauthorized" {
				t.Fatalf("401 body = %s", r.Raw)
			}
			mustStatus(t, c.do(n.HTTPAddr(), "GET", "/metrics", nil), http.StatusUnauthorized, "metrics without token")
			mustStatus(t, c.do(n.HTTPAddr(), "GET", "/v1/status", nil), http.StatusUnauthorized, "status without token")
		}
		c.token = ""
		mustStatus(t, c.do(n.HTTPAddr(), "GET", "/healthz", nil), http.StatusOK, "healthz needs no token")
		mustStatus(t, c.do(n.HTTPAddr(), "GET", "/readyz", nil), http.StatusOK, "readyz needs no token")
		c.token = "s3cret-0123456789abcdef"
		// With the token, also through a follower (the header is forwarded).
		r := c.acquire(n.HTTPAddr(), "k-"+n.ID(), "o", time.Second, 0)
		mustStatus(t, r, http.StatusOK, "acquire with the token on "+n.ID())
	}
}

func TestCluster_ContentionAnswers409AndIsCounted(t *testing.T) {
	nodes := startCluster(t, 1, nil)
	addr := nodes[0].HTTPAddr()
	c := newClient(t)
	mustStatus(t, c.acquire(addr, "k", "a", 10*time.Second, 0), http.StatusOK, "first acquire")
	for i := 0; i < 3; i++ {
		r := c.acquire(addr, "k", "b", 10*time.Second, 0)
		mustStatus(t, r, http.StatusConflict, "contended acquire")
		if r.str("code") != "not_acquired" {
			t.Fatalf("body = %s", r.Raw)
		}
	}
	// Extend never re-grants, and a foreign extend changes nothing.
	r := c.do(addr, "POST", "/v1/extend", map[string]any{"key": "k", "owner": "b", "ttl_ms": 5000})
	if r.Status != http.StatusOK || r.flag("extended") {
		t.Fatalf("foreign extend = %d %s", r.Status, r.Raw)
	}
	r = c.do(addr, "POST", "/v1/extend", map[string]any{"key": "k", "owner": "a", "ttl_ms": 5000})
	if r.Status != http.StatusOK || !r.flag("extended") || r.num("ttl_ms") != 5000 {
		t.Fatalf("extend = %d %s", r.Status, r.Raw)
	}
	r = c.do(addr, "POST", "/v1/force-release", map[string]any{"key": "k"})
	if r.Status != http.StatusOK || !r.flag("released") {
		t.Fatalf("force release = %d %s", r.Status, r.Raw)
	}
	r = c.do(addr, "POST", "/v1/extend", map[string]any{"key": "k", "owner": "a", "ttl_ms": 5000})
	if r.Status != http.StatusOK || r.flag("extended") {
		t.Fatalf("extend after force release = %d %s (must not re-grant)", r.Status, r.Raw)
	}

	m := c.do(addr, "GET", "/metrics", nil)
	for _, want := range []string{
		`zerotal_lock_contention_total{node="n1"} 3`,
		`zerotal_lock_acquire_wait_seconds_count{node="n1"} 1`,
		`zerotal_lock_hold_seconds_count{node="n1"} 1`,
		`zerotal_lock_raft_state{node="n1"} 2`,
		`zerotal_lock_keys{node="n1"} 0`,
		`zerotal_lock_waiters{node="n1"} 0`,
		`zerotal_lock_expired_total{node="n1"} 0`,
	} {
		if !strings.Contains(m.Raw, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestCluster_ListAndStatus(t *testing.T) {
	nodes, leader, c := startLedCluster(t, 3)
	for _, k := range []string{"b/2", "a/1", "b/1", "c"} {
		mustStatus(t, c.acquire(leader.HTTPAddr(), k, "o", time.Minute, 0), http.StatusOK, "acquire "+k)
	}
	fol := followers(nodes, leader)[0]
	r := c.do(fol.HTTPAddr(), "GET", "/v1/locks?prefix=b/&limit=1", nil)
	mustStatus(t, r, http.StatusOK, "list")
	locks, _ := r.Body["locks"].([]any)
	if len(locks) != 1 || !r.flag("truncated") || locks[0].(map[string]any)["key"] != "b/1" {
		t.Fatalf("list = %s", r.Raw)
	}
	r = c.do(fol.HTTPAddr(), "GET", "/v1/locks", nil)
	locks, _ = r.Body["locks"].([]any)
	if len(locks) != 4 || r.flag("truncated") || locks[0].(map[string]any)["key"] != "a/1" {
		t.Fatalf("full list = %s", r.Raw)
	}

	r = c.do(fol.HTTPAddr(), "GET", "/v1/status", nil)
	mustStatus(t, r, http.StatusOK, "status")
	peers, _ := r.Body["peers"].([]any)
	if r.str("id") != fol.ID() || r.str("state") != "follower" || r.str("leader_id") != leader.ID() ||
		r.str("leader_http") != leader.HTTPAddr() || len(peers) != 3 || r.num("term") < 1 {
		t.Fatalf("status = %s", r.Raw)
	}
	waitFor(t, 5*time.Second, "the follower to apply every lock", func() bool {
		return c.do(fol.HTTPAddr(), "GET", "/v1/status", nil).num("keys") == 4
	})
}

func TestCluster_JoinIsIdempotent(t *testing.T) {
	nodes, leader, c := startLedCluster(t, 2)
	other := followers(nodes, leader)[0]
	for i := 0; i < 2; i++ {
		r := c.do(other.HTTPAddr(), "POST", "/v1/join", map[string]any{"id": other.ID(), "addr": other.RaftAddr(), "http": other.AdvertisedHTTPAddr()})
		mustStatus(t, r, http.StatusOK, "repeated join")
	}
	r := c.do(leader.HTTPAddr(), "GET", "/v1/status", nil)
	if peers, _ := r.Body["peers"].([]any); len(peers) != 2 {
		t.Fatalf("peers after repeated joins = %s", r.Raw)
	}
}

func TestCluster_KeyLimitAnswers429(t *testing.T) {
	nodes := startCluster(t, 1, func(c *Config) { c.MaxKeys = 2; c.MaxWaitersPerKey = 1 })
	addr := nodes[0].HTTPAddr()
	c := newClient(t)
	mustStatus(t, c.acquire(addr, "a", "o", time.Minute, 0), http.StatusOK, "first key")
	mustStatus(t, c.acquire(addr, "b", "o", time.Minute, 0), http.StatusOK, "second key")
	r := c.acquire(addr, "c", "o", time.Minute, 0)
	mustStatus(t, r, http.StatusTooManyRequests, "key over the limit")
	if r.str("code") != "full" || !strings.Contains(r.str("message"), "limit") {
		t.Fatalf("429 body = %s", r.Raw)
	}
	// One waiter fits, the second does not.
	done := make(chan reply, 1)
	go func() { done <- c.acquire(addr, "a", "w1", time.Minute, 10*time.Second) }()
	waitFor(t, 5*time.Second, "w1 to queue", func() bool { return c.get(addr, "a").num("waiters") == 1 })
	mustStatus(t, c.acquire(addr, "a", "w2", time.Minute, 10*time.Second), http.StatusTooManyRequests, "waiter over the limit")
	c.release(addr, "a", "o")
	mustStatus(t, <-done, http.StatusOK, "the queued waiter")
}

// Every node applies the same log to the same state: once they have all
// applied the same index, their snapshots are byte-identical.
func TestCluster_NodesConvergeToIdenticalSnapshots(t *testing.T) {
	nodes, leader, c := startLedCluster(t, 3)
	fs := followers(nodes, leader)
	done := make(chan reply, 1)
	mustStatus(t, c.acquire(fs[0].HTTPAddr(), "x", "a", time.Minute, 0), http.StatusOK, "acquire x")
	go func() { done <- c.acquire(fs[1].HTTPAddr(), "x", "b", time.Minute, 10*time.Second) }()
	waitFor(t, 5*time.Second, "b to queue", func() bool { return c.get(leader.HTTPAddr(), "x").num("waiters") == 1 })
	for i := 0; i < 20; i++ {
		mustStatus(t, c.acquire(fs[i%2].HTTPAddr(), fmt.Sprintf("k%d", i), "o", time.Minute, 0), http.StatusOK, "acquire")
	}
	c.release(fs[0].HTTPAddr(), "x", "a")
	mustStatus(t, <-done, http.StatusOK, "b's wait")
	// Free every key so the leader stops ticking and the log settles.
	c.release(leader.HTTPAddr(), "x", "b")
	for i := 0; i < 20; i++ {
		c.do(leader.HTTPAddr(), "POST", "/v1/force-release", map[string]any{"key": fmt.Sprintf("k%d", i)})
	}
	var snaps [][]byte
	waitFor(t, 10*time.Second, "every node to apply the same last entry", func() bool {
		last := leader.raft.LastIndex()
		for _, n := range nodes {
			if n.fsm.AppliedIndex() != last {
				return false
			}
		}
		snaps = snaps[:0]
		for _, n := range nodes {
			snaps = append(snaps, fsmSnapshot(t, n))
		}
		return leader.raft.LastIndex() == last
	})
	for i, s := range snaps[1:] {
		if !bytes.Equal(s, snaps[0]) {
			t.Fatalf("%s's snapshot differs from %s's", nodes[i+1].ID(), nodes[0].ID())
		}
	}
}
