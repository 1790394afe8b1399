package cluster

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
)

// A one-key mutex with a cap on total hold time is never written as
// v0.1.0's acquire entry, which has no room for the cap: while a member
// runs an older release the request is answered 501, naming it, with
// nothing written, waiting or not; once every member applies the
// acquire-keys entry, the request is that entry, carrying the cap.
func TestCluster_MaxHoldIsTheAcquireKeysEntryOnly(t *testing.T) {
	nodes := startCluster(t, 3, nil)
	leader := waitLeader(t, nodes)
	old := followers(nodes, leader)[0]
	old.olderRelease.Store(true)
	leader.featureMembers.Clear() // as a leader that has not asked yet

	var mu sync.Mutex
	var entries []fsm.Entry // the capped owner's entries the member applied
	hook := func(a fsm.Applied) {
		if a.Entry.Owner == "capped" {
			mu.Lock()
			entries = append(entries, a.Entry)
			mu.Unlock()
		}
	}
	old.applyHook.Store(&hook)
	defer old.applyHook.Store(nil)
	c := newClient(t)
	body := func(wait int64) map[string]any {
		return map[string]any{"key": "m", "owner": "capped", "ttl_ms": time.Minute.Milliseconds(), "max_hold_ms": 60_000, "wait_ms": wait}
	}
	before := leader.raft.LastIndex()
	for _, wait := range []int64{0, 1000} {
		r := c.do(leader.HTTPAddr(), "POST", "/v1/acquire", body(wait))
		if r.Status != http.StatusNotImplemented || r.str("code") != "unsupported" || !strings.Contains(r.str("message"), old.cfg.ID) {
			t.Fatalf("a capped mutex (wait_ms %d) with an older member: %d %s; want 501 unsupported naming %s", wait, r.Status, r.Raw, old.cfg.ID)
		}
	}
	if after := leader.raft.LastIndex(); after != before {
		t.Fatalf("the refused requests wrote to the log (%d -> %d)", before, after)
	}

	old.olderRelease.Store(false) // upgraded
	mustStatus(t, c.do(leader.HTTPAddr(), "POST", "/v1/acquire", body(0)), http.StatusOK, "a capped mutex once every member applies it")
	waitFor(t, 10*time.Second, "the member to apply the capped acquire", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(entries) > 0
	})
	mu.Lock()
	defer mu.Unlock()
	if e := entries[0]; len(entries) != 1 || e.Op != engine.OpAcquireKeys || e.MaxHold != time.Minute {
		t.Fatalf("the member applied %d entries, the first %v with MaxHold %v; want one acquire-keys entry with MaxHold 1m", len(entries), e.Op, e.MaxHold)
	}
}
