package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// The two join mistakes, with real processes and lockcluster join: an
// HTTP address of one node with the raft address of another (a node
// with a table of its own), and a member's raft address under a new id.
// Each is refused (exit 65) with the reason, and changes nothing: the
// voters are the same, the other node keeps its own table, the member
// stays a healthy voter and nothing is marked removed. Then the
// documented join of the new node works. Before, the first made the
// other node a voter with a forked table, and the second removed the
// member for good while the new node never joined.
func TestAdmin_JoinMistakesAreRefusedAndChangeNothing(t *testing.T) {
	c := newCluster(t)
	cl := c.client()
	ctx := t.Context()
	if _, ok, err := driverstest.Take(ctx, cl, "ours", "alice", 5*time.Minute); err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	n4, island := newNode(t, "n4"), newNode(t, "island")
	island.env = []string{"LOCKCLUSTER_BOOTSTRAP_SELF=true"}
	c.add(n4)
	c.add(island)
	ask := c.clientAt(island.httpAddr)
	poll.Until(t, 20*time.Second, "n4 waits to be added and the island leads its own cluster", func() bool {
		st4, err4 := ask.NodeStatus(ctx, n4.httpAddr)
		sti, erri := ask.NodeStatus(ctx, island.httpAddr)
		return err4 == nil && erri == nil && st4.Membership == api.MemberWaiting && sti.State == "leader"
	})
	if _, ok, err := driverstest.Take(ctx, ask, "theirs", "mallory", 5*time.Minute); err != nil || !ok {
		t.Fatalf("acquire on the island: %v %v", ok, err)
	}
	members := c.addrs()[:3]
	voters := func() int {
		st, err := cl.Status(ctx)
		if err != nil {
			t.Fatalf("status: %v", err)
		}
		return len(st.Peers)
	}

	// 1. n4's HTTP address, the island's raft address.
	code, out := cliAt(t, members, operatorToken, "join", "--id", "n4", "--raft-addr", island.raftAddr, "--http-addr", n4.httpAddr)
	if code != 65 || !strings.Contains(out, "has raft address "+n4.raftAddr+", not "+island.raftAddr) {
		t.Fatalf("join of a mismatched pair: exit %d\n%s", code, out)
	}
	t.Logf("refused: %s", out)
	if v := voters(); v != 3 {
		t.Fatalf("the refused join left %d voters", v)
	}
	if st, err := ask.NodeStatus(ctx, island.httpAddr); err != nil || st.State != "leader" || st.Keys != 1 {
		t.Fatalf("the island after the refused join: %+v %v", st, err)
	}

	// 2. A member's raft address under a new id.
	n2 := c.nodes[1]
	code, out = cliAt(t, members, operatorToken, "join", "--id", "n4", "--raft-addr", n2.raftAddr, "--http-addr", n4.httpAddr)
	if code != 65 || !strings.Contains(out, `is member "n2"'s`) {
		t.Fatalf("join at n2's raft address: exit %d\n%s", code, out)
	}
	t.Logf("refused: %s", out)
	if v := voters(); v != 3 {
		t.Fatalf("the refused join left %d voters", v)
	}
	if _, err := os.Stat(filepath.Join(n2.dataDir, "REMOVED")); !os.IsNotExist(err) {
		t.Fatalf("n2's data dir is marked removed: %v", err)
	}
	if _, ok, err := driverstest.Take(ctx, cl, "after", "o", 5*time.Minute); err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	poll.Until(t, 20*time.Second, "n2, a member, to apply the grant", func() bool {
		st, err := ask.NodeStatus(ctx, n2.httpAddr)
		return err == nil && st.Membership == api.MemberOf && st.Keys == 2
	})

	// 3. The documented join of n4, at its own addresses.
	island.kill()
	if code, out := cliAt(t, members, operatorToken, "join", "--id", "n4", "--raft-addr", n4.raftAddr, "--http-addr", n4.httpAddr); code != 0 {
		t.Fatalf("join: exit %d\n%s", code, out)
	}
	poll.Until(t, 30*time.Second, "n4 to apply the cluster's table", func() bool {
		st, err := ask.NodeStatus(ctx, n4.httpAddr)
		return err == nil && st.Membership == api.MemberOf && st.Keys == 2 && len(st.Peers) == 4
	})
}
