package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/internal/loopback"
)

// The joins below go to a cluster of three, so that a wrong addition
// still commits (3 of 4) and shows what it does, as it did before.

// waitingNode starts a node that waits to be added (an empty data dir,
// neither Bootstrap nor Join).
func waitingNode(t *testing.T, id string, mod func(*Config)) *Node {
	t.Helper()
	cfg := testConfig(t, id)
	cfg.BootstrapSelf = false
	if mod != nil {
		mod(&cfg)
	}
	return startNode(t, cfg)
}

// voterIDs is the leader's raft configuration: id -> address.
func voterIDs(t *testing.T, n *Node) map[string]string {
	t.Helper()
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range f.Configuration().Servers {
		out[string(s.ID)] = string(s.Address)
	}
	return out
}

func sameVoters(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func mustRefuseJoin(t *testing.T, r reply, what string, wants ...string) {
	t.Helper()
	if r.Status != http.StatusConflict || r.str("code") != api.CodeJoinRefused {
		t.Fatalf("%s: status %d, want 409 join_refused; body %s", what, r.Status, r.Raw)
	}
	t.Logf("%s: refused: %s", what, r.str("message"))
	for _, w := range wants {
		if !strings.Contains(r.str("message"), w) {
			t.Fatalf("%s: message %q does not say %q", what, r.str("message"), w)
		}
	}
}

// A join whose HTTP address is one node (new, empty) and whose raft
// address is another (a node with a log and a table of its own) is
// refused: the leader adds only the node it asked. Before, it asked the
// empty one and added the other, whose table then forked the cluster's.
func TestJoin_MismatchedHTTPAndRaftAddressesAreRefused(t *testing.T) {
	_, leader, c := startLedCluster(t, 3)
	mustStatus(t, c.acquire(leader.HTTPAddr(), "ours", "alice", time.Minute, 0), http.StatusOK, "acquire ours")

	fresh := waitingNode(t, "n4", nil)
	island := startNode(t, testConfig(t, "island")) // a cluster of its own, with a log
	waitLeader(t, []*Node{island})
	mustStatus(t, c.acquire(island.HTTPAddr(), "theirs", "mallory", time.Minute, 0), http.StatusOK, "acquire on the island")

	before := voterIDs(t, leader)
	r := c.do(leader.HTTPAddr(), "POST", "/v1/join", map[string]any{"id": "n4", "addr": island.RaftAddr(), "http": fresh.HTTPAddr()})
	mustRefuseJoin(t, r, "join of n4's HTTP address with the island's raft address", island.RaftAddr(), fresh.RaftAddr())
	if after := voterIDs(t, leader); !sameVoters(before, after) {
		t.Fatalf("a refused join changed the configuration: %v -> %v", before, after)
	}
	if v := viewOf(t, leader, "theirs"); v.owner != "" {
		t.Fatalf("the island's table reached the cluster: %+v", v)
	}
	if v := viewOf(t, island, "ours"); v.owner != "" || !island.IsLeader() {
		t.Fatalf("the cluster reached the island: %+v leading=%v", v, island.IsLeader())
	}
	// The documented join of the same node still works.
	mustStatus(t, c.do(leader.HTTPAddr(), "POST", "/v1/join", map[string]any{"id": "n4", "addr": fresh.RaftAddr(), "http": fresh.HTTPAddr()}),
		http.StatusOK, "join of n4 at its own addresses")
	waitFor(t, 20*time.Second, "n4 to apply the cluster's table", func() bool { return viewOf(t, fresh, "ours").owner == "alice" })
}

// A join that names a member's raft address under a new id (a typo) is
// refused naming that member: the member stays a healthy voter and
// nothing is marked removed. Before, the leader removed the member to
// make room, the member marked its data dir REMOVED for good, and the
// new node never joined.
func TestJoin_AnotherMembersRaftAddressIsRefused(t *testing.T) {
	nodes := startCluster(t, 3, nil)
	leader := waitLeader(t, nodes)
	victim := followers(nodes, leader)[0]
	fresh := waitingNode(t, "n4", nil)
	c := newClient(t)

	before := voterIDs(t, leader)
	r := c.do(leader.HTTPAddr(), "POST", "/v1/join", map[string]any{"id": "n4", "addr": victim.RaftAddr(), "http": fresh.HTTPAddr()})
	mustRefuseJoin(t, r, "join of n4 at "+victim.ID()+"'s raft address", victim.RaftAddr(), `"`+victim.ID()+`"`)
	if after := voterIDs(t, leader); !sameVoters(before, after) {
		t.Fatalf("a refused join changed the configuration: %v -> %v", before, after)
	}
	if m := victim.Membership(); m != api.MemberOf {
		t.Fatalf("%s after the refused join: membership %s", victim.ID(), m)
	}
	if _, err := os.Stat(filepath.Join(victim.cfg.DataDir, removedFile)); !os.IsNotExist(err) {
		t.Fatalf("%s's data dir is marked removed: %v", victim.ID(), err)
	}
	// The member still takes part: a grant through it is applied by it.
	mustStatus(t, c.acquire(victim.HTTPAddr(), "after", "o", time.Minute, 0), http.StatusOK, "acquire through "+victim.ID())
	waitFor(t, 10*time.Second, victim.ID()+" to apply the grant", func() bool { return viewOf(t, victim, "after").owner == "o" })
}

// A node that says over HTTP that it is the node to add, empty and at
// the raft address given, is also asked at that raft address itself:
// whatever answers there must be that id, with no raft state. Here the
// HTTP answer is made up and the raft address is a node with a log.
func TestJoin_TheNodeAtTheRaftAddressIsAskedToo(t *testing.T) {
	nodes := startCluster(t, 3, nil)
	leader := waitLeader(t, nodes)
	island := startNode(t, testConfig(t, "n4")) // named n4, with a log of its own
	waitLeader(t, []*Node{island})
	c := newClient(t)

	info := island.nodeInfo()
	info.LastIndex, info.Servers, info.State, info.Members, info.Membership = 0, 0, "follower", []string{}, api.MemberWaiting
	liar := fakeNode(t, info)
	before := voterIDs(t, leader)
	r := c.do(leader.HTTPAddr(), "POST", "/v1/join", map[string]any{"id": "n4", "addr": island.RaftAddr(), "http": liar.addr})
	mustRefuseJoin(t, r, "join of a node that hides its log over HTTP", island.RaftAddr(), "raft state")
	if after := voterIDs(t, leader); !sameVoters(before, after) {
		t.Fatalf("a refused join changed the configuration: %v -> %v", before, after)
	}
}

// The leader asks the node to add what it is with no credential: the
// operator token a join carries never goes to the address the join
// names, which whoever calls join chooses.
func TestJoin_TheNodeAskedNeverGetsTheOperatorToken(t *testing.T) {
	const token = "operator-token-0123456789"
	nodes := startCluster(t, 1, func(c *Config) { c.Token = token })
	c := newClient(t)
	c.token = token
	fake := fakeNode(t, api.NodeInfo{ID: "n2", ClusterID: DefaultClusterID, Membership: api.MemberWaiting, State: "follower",
		Members: []string{}, Features: []string{api.FeatureAcquireKeys}})
	r := c.do(nodes[0].HTTPAddr(), "POST", "/v1/join", map[string]any{"id": "n2", "addr": loopback.MustFreeAddr(t), "http": fake.addr})
	if r.Status == http.StatusOK {
		t.Fatalf("a join of a node that does not listen at its raft address succeeded: %s", r.Raw)
	}
	if fake.asked() == 0 {
		t.Fatalf("the leader never asked the node: %d %s", r.Status, r.Raw)
	}
	if got := fake.authorization(); got != "" {
		t.Fatalf("the node asked received the credential %q", got)
	}
}

// A node whose table limits differ from the leader's is refused at join,
// naming both values: the table is replicated, and a node with another
// cap would apply the same log to another table.
func TestJoin_NodeWithOtherTableLimitsIsRefused(t *testing.T) {
	nodes := startCluster(t, 3, func(c *Config) { c.MaxKeys = 500 })
	leader := waitLeader(t, nodes)
	c := newClient(t)
	before := voterIDs(t, leader)
	small := waitingNode(t, "n4", func(c *Config) { c.MaxKeys = 10 })
	r := c.do(leader.HTTPAddr(), "POST", "/v1/join", map[string]any{"id": "n4", "addr": small.RaftAddr(), "http": small.HTTPAddr()})
	mustRefuseJoin(t, r, "join of a node with --max-keys 10", "--max-keys", "10", "500")
	waiters := waitingNode(t, "n5", func(c *Config) { c.MaxKeys, c.MaxWaitersPerKey = 500, 3 })
	r = c.do(leader.HTTPAddr(), "POST", "/v1/join", map[string]any{"id": "n5", "addr": waiters.RaftAddr(), "http": waiters.HTTPAddr()})
	mustRefuseJoin(t, r, "join of a node with --max-waiters 3", "--max-waiters", "3", "1000")
	holders := waitingNode(t, "n6", func(c *Config) { c.MaxKeys, c.MaxHoldersPerKey = 500, 5 })
	r = c.do(leader.HTTPAddr(), "POST", "/v1/join", map[string]any{"id": "n6", "addr": holders.RaftAddr(), "http": holders.HTTPAddr()})
	mustRefuseJoin(t, r, "join of a node with --max-holders 5", "--max-holders 5 on n6", fmt.Sprintf("%d on n1", DefaultMaxHoldersPerKey))
	if after := voterIDs(t, leader); !sameVoters(before, after) {
		t.Fatalf("a refused join changed the configuration: %v -> %v", before, after)
	}
}

// fake is an HTTP server that answers GET /v1/node with info and records
// the Authorization header of every request.
type fake struct {
	addr  string
	mu    sync.Mutex
	auths []string
}

func fakeNode(t *testing.T, info api.NodeInfo) *fake {
	f := &fake{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.auths = append(f.auths, r.Header.Get("Authorization"))
		f.mu.Unlock()
		if r.URL.Path != api.PathNode {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(info)
	}))
	t.Cleanup(srv.Close)
	f.addr = strings.TrimPrefix(srv.URL, "http://")
	return f
}

func (f *fake) asked() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.auths)
}

// authorization is the first non-empty Authorization header received.
func (f *fake) authorization() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range f.auths {
		if a != "" {
			return a
		}
	}
	return ""
}

// A member restarted with other table limits than the leader's is
// refused at start, naming both values, before raft starts; with the
// cluster's values it starts and takes part again. Before, it started
// and applied the log to another table than the others'.
func TestJoin_MemberRestartedWithOtherLimitsIsRefused(t *testing.T) {
	cfgs := map[string]Config{}
	nodes := startCluster(t, 3, func(c *Config) {
		c.MaxKeys = 500
		c.RaftAddr, c.HTTPAddr = loopback.MustFreeAddr(t), loopback.MustFreeAddr(t) // the same on restart
		cfgs[c.ID] = *c
	})
	leader := waitLeader(t, nodes)
	f := followers(nodes, leader)[0]
	cfg := cfgs[f.ID()]
	waitFor(t, 10*time.Second, f.ID()+" to save the members' addresses", func() bool {
		return f.loadMembers()[leader.ID()] == leader.AdvertisedHTTPAddr()
	})
	shutdown(t, f)

	cfg.MaxKeys = 10
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if n, err := NewNode(ctx, cfg); err == nil {
		shutdown(t, n)
		t.Fatalf("%s restarted with --max-keys 10 in a cluster of 500", cfg.ID)
	} else if msg := err.Error(); !strings.Contains(msg, "--max-keys 10 on "+cfg.ID) || !strings.Contains(msg, "500 on the leader "+leader.ID()) {
		t.Fatalf("the refusal does not name both values: %v", err)
	} else {
		t.Logf("refused: %v", err)
	}
	cfg.MaxKeys = 500
	again := startNode(t, cfg)
	waitLeader(t, []*Node{leader, again})
}

// A join of a known id at a new address replaces the member's entry only
// when the member no longer answers at its old address (it moved, its
// data dir emptied): a second node given a live member's id is refused,
// and the member stays. Before, the live member was removed.
func TestJoin_KnownIDAtANewAddressReplacesOnlyAMemberThatIsGone(t *testing.T) {
	nodes, leader, c := startLedCluster(t, 3)
	member := followers(nodes, leader)[0]
	mustStatus(t, c.acquire(leader.HTTPAddr(), "k", "alice", time.Minute, 0), http.StatusOK, "acquire k")

	twin := waitingNode(t, member.ID(), nil)
	before := voterIDs(t, leader)
	r := c.do(leader.HTTPAddr(), "POST", "/v1/join", map[string]any{"id": member.ID(), "addr": twin.RaftAddr(), "http": twin.HTTPAddr()})
	mustRefuseJoin(t, r, "join of a second node named "+member.ID(), "still answers at its raft address "+member.RaftAddr())
	if after := voterIDs(t, leader); !sameVoters(before, after) || member.Membership() != api.MemberOf {
		t.Fatalf("a refused join changed the configuration: %v -> %v; %s is %s", before, after, member.ID(), member.Membership())
	}
	shutdown(t, twin)

	// The member moves: stopped, then started with an empty data dir at
	// new addresses, and joined again.
	shutdown(t, member)
	moved := waitingNode(t, member.ID(), nil)
	mustStatus(t, c.do(leader.HTTPAddr(), "POST", "/v1/join", map[string]any{"id": member.ID(), "addr": moved.RaftAddr(), "http": moved.HTTPAddr()}),
		http.StatusOK, "join of the member at its new address")
	if got := voterIDs(t, leader); len(got) != 3 || got[member.ID()] != moved.RaftAddr() {
		t.Fatalf("configuration after the move: %v", got)
	}
	waitFor(t, 20*time.Second, "the moved member to apply the table", func() bool { return viewOf(t, moved, "k").owner == "alice" })
}
