package cluster

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/internal/loopback"
)

// A node started with neither Bootstrap nor Join waits: it grants
// nothing and says so, until a member adds it. Before, it bootstrapped a
// cluster of its own and granted locks.
func TestMembership_NodeWithoutBootstrapWaitsToBeAdded(t *testing.T) {
	cfg := testConfig(t, "lonely")
	cfg.BootstrapSelf = false
	n := startNode(t, cfg)
	c := newClient(t)
	// Long enough for an election timeout or two: a node that bootstraps
	// itself leads within one.
	time.Sleep(3 * testElection)
	r := c.acquire(n.HTTPAddr(), "k", "o", time.Minute, 0)
	if r.Status != http.StatusServiceUnavailable || !strings.Contains(r.str("message"), "waiting to be added") {
		t.Fatalf("acquire on a node waiting to be added: %d %v", r.Status, r.Body)
	}
	if rd := n.readiness(n.raft); rd.Ready || !strings.Contains(rd.Reason, "waiting to be added") {
		t.Fatalf("readiness: %+v", rd)
	}
	if st := n.status(); st.Membership != api.MemberWaiting || st.State == "leader" {
		t.Fatalf("status: %+v", st)
	}
	if n.raft.LastIndex() != 0 {
		t.Fatalf("a waiting node wrote raft state: last index %d", n.raft.LastIndex())
	}
}

// A member removed right after it was added (within one poll of the
// configuration) still learns it was removed: it stops serving, says so,
// closes Removed, and its data dir refuses a restart.
func TestMembership_RemovedMemberStopsAndStaysRefused(t *testing.T) {
	nodes := startCluster(t, 2, nil)
	leader := waitLeader(t, nodes)
	cfg := testConfig(t, "n3")
	cfg.BootstrapSelf = false
	n3 := startNode(t, cfg)
	c := newClient(t)
	mustStatus(t, c.do(leader.HTTPAddr(), "POST", "/v1/join", map[string]any{"id": "n3", "addr": n3.RaftAddr(), "http": n3.HTTPAddr()}), 200, "join n3")
	// The leave follows as soon as the cluster's log reached n3, before
	// its poll of the configuration. (A node removed before any entry
	// reached it holds nothing: it still waits, as a new node does, and
	// may be joined again.)
	waitFor(t, 10*time.Second, "the cluster's log to reach n3", func() bool { return n3.raft.LastIndex() > 0 })
	mustStatus(t, c.do(leader.HTTPAddr(), "POST", "/v1/leave", map[string]any{"id": "n3"}), 200, "leave n3")
	select {
	case <-n3.Removed():
	case <-time.After(10 * time.Second):
		t.Fatalf("n3 did not learn its removal; membership %s", n3.Membership())
	}
	if rd := n3.readiness(n3.raft); rd.Ready || rd.Reason != "removed from the cluster" {
		t.Fatalf("readiness of a removed node: %+v", rd)
	}
	r := c.acquire(n3.HTTPAddr(), "k", "o", time.Minute, 0)
	if r.Status != http.StatusServiceUnavailable || !strings.Contains(r.str("message"), "removed from the cluster") {
		t.Fatalf("acquire on a removed node: %d %v", r.Status, r.Body)
	}
	shutdown(t, n3)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if again, err := NewNode(ctx, cfg); err == nil || !strings.Contains(err.Error(), "was removed from its cluster") {
		if again != nil {
			shutdown(t, again)
		}
		t.Fatalf("restart of a removed node: %v", err)
	}
}

// A join of a node that has raft state of its own (it bootstrapped
// itself) is refused with the reason, and the cluster is unchanged.
func TestMembership_JoinOfANodeWithStateIsRefused(t *testing.T) {
	nodes := startCluster(t, 1, nil)
	island := startNode(t, testConfig(t, "island")) // BootstrapSelf: a cluster of its own
	waitLeader(t, []*Node{island})
	c := newClient(t)
	r := c.do(nodes[0].HTTPAddr(), "POST", "/v1/join", map[string]any{"id": "island", "addr": island.RaftAddr(), "http": island.HTTPAddr()})
	if r.Status != http.StatusConflict || r.str("code") != api.CodeJoinRefused || !strings.Contains(r.str("message"), "has raft state of its own") {
		t.Fatalf("join of a node with state: %d %v", r.Status, r.Body)
	}
	if msg := r.str("message"); !strings.Contains(msg, "a configuration of 1 server)") {
		t.Errorf("join of a node with state: %q; want it to count the island's one server in words that agree", msg)
	}
	r = c.do(nodes[0].HTTPAddr(), "POST", "/v1/join", map[string]any{"id": "other-id", "addr": island.RaftAddr(), "http": island.HTTPAddr()})
	if r.Status != http.StatusConflict || !strings.Contains(r.str("message"), `is "island", not "other-id"`) {
		t.Fatalf("join under another id: %d %v", r.Status, r.Body)
	}
	if st := nodes[0].status(); len(st.Peers) != 1 {
		t.Fatalf("the refused joins changed the configuration: %+v", st.Peers)
	}
}

// A member removed while it was down learns it when it starts again: it
// knows no leader (none replicates to it any more), asks the members it
// knows, and the leader's configuration lacks it.
func TestMembership_MemberRemovedWhileDownLearnsItOnRestart(t *testing.T) {
	nodes := startCluster(t, 2, nil)
	leader := waitLeader(t, nodes)
	cfg := testConfig(t, "n3")
	cfg.BootstrapSelf, cfg.Join = false, leader.HTTPAddr()
	cfg.RaftAddr, cfg.HTTPAddr = loopback.MustFreeAddr(t), loopback.MustFreeAddr(t) // the same on restart
	n3 := startNode(t, cfg)
	waitLeader(t, append(nodes, n3))
	shutdown(t, n3)
	c := newClient(t)
	mustStatus(t, c.do(leader.HTTPAddr(), "POST", "/v1/leave", map[string]any{"id": "n3"}), 200, "leave n3 while it is down")

	n3 = startNode(t, cfg)
	select {
	case <-n3.Removed():
	case <-time.After(20 * time.Second):
		t.Fatalf("n3, removed while down, did not learn it; membership %s", n3.Membership())
	}
	if rd := n3.readiness(n3.raft); rd.Reason != "removed from the cluster" {
		t.Fatalf("readiness: %+v", rd)
	}
}
