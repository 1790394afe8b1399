package cluster

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
)

// A rolling upgrade from v0.1.0, through the feature gate: while a member
// says it runs v0.1.0 (it lists no acquire-keys), the leader writes a
// single key's mutex as v0.1.0's acquire entry (type 1), which that member
// applies, and answers a set or a shared claim 501 naming the member,
// writing nothing; once the member says it applies the one acquire entry
// (type 10), the leader learns it without any request waiting for the
// question, and writes every acquire as that entry. The grants made
// through entry 1 stay the owner's: the new entry refreshes them.
func TestCluster_RollingUpgradeFromV010WritesTheOneAcquireEntryOnceEveryMemberAppliesIt(t *testing.T) {
	nodes := startCluster(t, 3, nil)
	leader := waitLeader(t, nodes)
	old := followers(nodes, leader)[0]
	old.olderRelease.Store(true)
	leader.featureMembers.Clear() // as a leader that has not asked yet

	var mu sync.Mutex
	var upgraded atomic.Bool // set once the refused requests' checks are done
	var ops []engine.Op      // the acquire entries the member of v0.1.0 applied
	var refused []string     // entries of the refused requests' owner it applied: none
	var sets []engine.Op     // the same owner's entries once the member is upgraded
	hook := func(a fsm.Applied) {
		if strings.HasPrefix(a.Entry.Owner, "up-") {
			mu.Lock()
			ops = append(ops, a.Entry.Op)
			switch {
			case a.Entry.Owner != "up-2":
			case !upgraded.Load():
				refused = append(refused, a.Entry.Op.String())
			default:
				sets = append(sets, a.Entry.Op)
			}
			mu.Unlock()
		}
	}
	old.applyHook.Store(&hook)
	defer old.applyHook.Store(nil)
	applied := func() []engine.Op {
		mu.Lock()
		defer mu.Unlock()
		return append([]engine.Op(nil), ops...)
	}
	c := newClient(t)
	acquire := func(body map[string]any) reply {
		body["ttl_ms"] = time.Minute.Milliseconds()
		return c.do(leader.HTTPAddr(), "POST", "/v1/acquire", body)
	}

	// Before: one key's mutex is entry 1, at once and waiting.
	for _, body := range []map[string]any{
		{"key": "m", "owner": "up-1"},
		{"key": "w", "owner": "up-1", "wait_ms": 1000},
	} {
		mustStatus(t, acquire(body), http.StatusOK, "a mutex while a member runs v0.1.0")
	}
	waitFor(t, 10*time.Second, "the member of v0.1.0 to apply both acquires", func() bool { return len(applied()) == 2 })
	if got := applied(); got[0] != engine.OpAcquire || got[1] != engine.OpAcquire {
		t.Fatalf("the member of v0.1.0 applied %v; want v0.1.0's acquire entries", got)
	}
	for _, body := range []map[string]any{
		{"keys": []string{"a", "b"}, "owner": "up-2"},
		{"key": "s", "owner": "up-2", "semaphore": 2},
		{"key": "r", "owner": "up-2", "mode": "read", "wait_ms": 1000},
	} {
		r := acquire(body)
		if r.Status != http.StatusNotImplemented || r.str("code") != "unsupported" || !strings.Contains(r.str("message"), old.cfg.ID) {
			t.Fatalf("%v while a member runs v0.1.0: %d %s; want 501 unsupported naming %s", body, r.Status, r.Raw, old.cfg.ID)
		}
	}
	// Whether a refused request wrote anything is known once a later entry
	// has been applied (raft applies in order): the refresh below is one.
	mustStatus(t, acquire(map[string]any{"key": "m", "owner": "up-1"}), http.StatusOK, "a refresh of the mutex")
	waitFor(t, 10*time.Second, "the member of v0.1.0 to apply the refresh", func() bool { return len(applied()) >= 3 })
	mu.Lock()
	wrote := refused
	mu.Unlock()
	if len(wrote) > 0 {
		t.Fatalf("the refused requests wrote to the log: %v", wrote)
	}
	upgraded.Store(true)

	// The member is upgraded: the leader learns it in the background, and
	// a mutex's acquire becomes the one entry.
	old.olderRelease.Store(false)
	waitFor(t, 20*time.Second, "a mutex's acquire written as the one entry", func() bool {
		mustStatus(t, acquire(map[string]any{"key": "m", "owner": "up-1"}), http.StatusOK, "a refresh of the mutex")
		got := applied()
		return got[len(got)-1] == engine.OpAcquireKeys
	})
	r := acquire(map[string]any{"key": "m", "owner": "up-1"})
	mustStatus(t, r, http.StatusOK, "the refresh")
	if g := c.get(leader.HTTPAddr(), "m"); g.Body["fence"] != r.Body["fence"] || g.str("owner") != "up-1" {
		t.Fatalf("the grant of entry 1 after a refresh by entry 10: %s; the refresh answered %s", g.Raw, r.Raw)
	}
	for _, body := range []map[string]any{
		{"keys": []string{"a", "b"}, "owner": "up-2"},
		{"key": "s", "owner": "up-2", "semaphore": 2},
		{"key": "r", "owner": "up-2", "mode": "read", "wait_ms": 1000},
	} {
		mustStatus(t, acquire(body), http.StatusOK, "once every member applies the one entry")
	}
	// Counted by owner: the member may still be applying the refreshes of m.
	upgradedOnes := func() []engine.Op {
		mu.Lock()
		defer mu.Unlock()
		return append([]engine.Op(nil), sets...)
	}
	waitFor(t, 10*time.Second, "the upgraded member to apply them", func() bool { return len(upgradedOnes()) == 3 })
	for _, op := range upgradedOnes() {
		if op != engine.OpAcquireKeys {
			t.Fatalf("after the upgrade the member applied %v; want the one acquire entry only", upgradedOnes())
		}
	}
}

// A node refuses a field it does not know with a 400 that names it and
// the fields it does know, on a follower as on the leader, writing
// nothing: what lets a client tell a node of an older release (v0.1.0
// knows key, owner, ttl_ms and wait_ms) from a cluster that refused the
// request, and fall back (client: ErrUnsupported, keep_ms dropped).
func TestCluster_AnUnknownFieldIs400NamingIt(t *testing.T) {
	nodes, leader, c := startLedCluster(t, 3)
	for _, n := range nodes {
		r := c.do(n.HTTPAddr(), "POST", "/v1/acquire", map[string]any{"key": "k", "owner": "o", "ttl_ms": 1000, "priority": 1})
		want := `unknown field "priority"; the fields are key, keys, owner, ttl_ms, wait_ms, keep_ms, semaphore, mode`
		if r.Status != http.StatusBadRequest || r.str("code") != "invalid" || !strings.Contains(r.str("message"), want) {
			t.Fatalf("%s: %d %s; want 400 invalid naming the field: %s", n.cfg.ID, r.Status, r.Raw, want)
		}
	}
	// Nothing was written: the key is free (a linearizable read).
	if g := c.get(leader.HTTPAddr(), "k"); g.Status != http.StatusNotFound {
		t.Fatalf("the refused requests took the key: %d %s", g.Status, g.Raw)
	}
}
