package cluster

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestNotReady_Rule(t *testing.T) {
	follower := func(mod func(*readyInput)) readyInput {
		in := readyInput{state: raft.Follower, leaderID: "n1", leaderHTTP: true, silence: 50 * time.Millisecond, maxSilence: 500 * time.Millisecond}
		mod(&in)
		return in
	}
	cases := []struct {
		name string
		in   readyInput
		want string // "" ready, else a part of the reason
	}{
		{"leader after takeover", readyInput{state: raft.Leader, leading: true, silence: -1}, ""},
		{"leader taking over", readyInput{state: raft.Leader, silence: -1}, "still taking over"},
		{"follower in touch", follower(func(*readyInput) {}), ""},
		{"follower at the limit", follower(func(in *readyInput) { in.silence = in.maxSilence }), ""},
		{"follower, leader silent", follower(func(in *readyInput) { in.silence = 3240 * time.Millisecond }), "leader n1 not heard from for 3.2s"},
		{"follower, leader briefly silent", follower(func(in *readyInput) { in.silence = 612345 * time.Microsecond }), "for 612ms"},
		{"follower, leader never heard", follower(func(in *readyInput) { in.silence = -1 }), "never heard from"},
		{"follower, leader's HTTP unknown", follower(func(in *readyInput) { in.leaderHTTP = false }), "has not published its HTTP address"},
		{"follower without leader", follower(func(in *readyInput) { in.leaderID = "" }), "no leader"},
		{"candidate", readyInput{state: raft.Candidate, silence: -1}, "election in progress"},
		{"raft shut down", readyInput{state: raft.Shutdown, silence: -1}, "shutting down"},
		{"node closing", readyInput{closing: true, state: raft.Leader, leading: true}, "shutting down"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := notReady(c.in)
			if (got == "") != (c.want == "") || !strings.Contains(got, c.want) {
				t.Fatalf("notReady = %q, want %q", got, c.want)
			}
		})
	}
}

// readyz asks n's /readyz and checks that the status and the body agree.
func readyz(t *testing.T, c *apiClient, n *Node) (bool, reply) {
	t.Helper()
	r := c.do(n.HTTPAddr(), "GET", "/readyz", nil)
	if (r.Status == http.StatusOK) != r.flag("ready") || (r.Status != http.StatusOK && r.Status != http.StatusServiceUnavailable) {
		t.Fatalf("/readyz on %s: status %d, body %s", n.ID(), r.Status, r.Raw)
	}
	if r.flag("ready") == (r.str("reason") != "") || r.str("state") == "" {
		t.Fatalf("/readyz on %s: body %s", n.ID(), r.Raw)
	}
	return r.flag("ready"), r
}

func waitReady(t *testing.T, c *apiClient, nodes ...*Node) {
	t.Helper()
	for _, n := range nodes {
		waitFor(t, 15*time.Second, n.ID()+" ready", func() bool { ok, _ := readyz(t, c, n); return ok })
	}
}

// readyBound is how soon a node must report that it lost its leader or
// its quorum: raft needs up to 2×LeaderLeaseTimeout for a leader to step
// down and HeartbeatTimeout for a follower's rule; the rest is slack for
// two busy cores under -race.
const readyBound = 5 * time.Second

// waitNotReady waits until n answers 503 and returns the reason.
func waitNotReady(t *testing.T, c *apiClient, n *Node) string {
	t.Helper()
	var reason string
	waitFor(t, readyBound, n.ID()+" not ready", func() bool {
		ok, r := readyz(t, c, n)
		reason = r.str("reason")
		return !ok
	})
	return reason
}

// /readyz follows raft: ready in a healthy cluster; an isolated follower
// and an isolated leader report 503 with a reason within a bound while
// the majority stays (or becomes) ready; all ready again once mended.
func TestCluster_ReadyzFollowsLeaderAndQuorum(t *testing.T) {
	nodes, trans := inmemCluster(t)
	c := newClient(t)
	leader := waitLeader(t, nodes)
	waitReady(t, c, nodes...)

	fol := followers(nodes, leader)
	i := indexOf(nodes, fol[0])
	isolate(trans[i], trans)
	reason := waitNotReady(t, c, fol[0])
	if !strings.Contains(reason, "leader") {
		t.Fatalf("isolated follower's reason = %q, want one about its leader", reason)
	}
	t.Logf("isolated follower: %s", reason)
	waitReady(t, c, leader, fol[1])

	connectAll(trans)
	waitReady(t, c, nodes...)

	leader = waitLeader(t, nodes)
	isolate(trans[indexOf(nodes, leader)], trans)
	reason = waitNotReady(t, c, leader)
	t.Logf("isolated leader: %s", reason)
	rest := followers(nodes, leader)
	waitReady(t, c, rest...)

	connectAll(trans)
	waitReady(t, c, nodes...)
}

func indexOf(nodes []*Node, n *Node) int {
	for i, m := range nodes {
		if m == n {
			return i
		}
	}
	panic("node not in the list")
}
