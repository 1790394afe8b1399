package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// cli runs a lockcluster admin command against c, with the operator's
// token, and returns its status and output.
func cli(t *testing.T, c *testCluster, args ...string) (int, string) {
	t.Helper()
	return cliAt(t, c.addrs(), operatorToken, args...)
}

func TestAdmin_StatusLocksJoinLeave(t *testing.T) {
	c := newCluster(t)
	cl := c.client()
	ctx := t.Context()

	code, out := cli(t, c, "status")
	if code != 0 || !strings.Contains(out, "leader") || strings.Count(out, "voter") != 3 {
		t.Fatalf("status: exit %d\n%s", code, out)
	}

	if _, ok, err := driverstest.Take(ctx, cl, "jobs/a", "owner-a", time.Minute); err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	if _, ok, err := driverstest.Take(ctx, cl, "other", "owner-b", time.Minute); err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	code, out = cli(t, c, "locks", "--prefix", "jobs/")
	if code != 0 || !strings.Contains(out, `"jobs/a"`) || !strings.Contains(out, "owner-a") || strings.Contains(out, "owner-b") {
		t.Fatalf("locks --prefix jobs/: exit %d\n%s", code, out)
	}

	// A fourth node asks to join when it starts (agent --join, with the
	// operator's token: joining is a membership right).
	n4 := newNode(t, "n4")
	n4.join, n4.env = c.nodes[0].httpAddr, []string{"LOCKCLUSTER_TOKEN=" + operatorToken}
	c.add(n4)
	poll.Until(t, 30*time.Second, "four nodes each listing four voters", func() bool {
		_, out := cli(t, c, "status", "-o", "json")
		return strings.Count(out, `"suffrage": "voter"`) >= 4*4 // four nodes each list four voters
	})

	code, out = cli(t, c, "leave", "--id", "n4")
	if code != 0 {
		t.Fatalf("leave: exit %d\n%s", code, out)
	}
	// The removed member stops serving and exits on its own, saying why;
	// its data dir refuses a restart.
	n4.waitExit(t, 30*time.Second, "removed from the cluster")
	c.nodes = c.nodes[:3]
	poll.Until(t, 30*time.Second, "status listing three voters", func() bool {
		code, out := cli(t, c, "status")
		return code == 0 && strings.Count(out, "voter") == 3
	})
	c.add(n4)
	n4.waitExit(t, 30*time.Second, "was removed from its cluster")
	c.nodes = c.nodes[:3]
}

// The join flow that docs/CLI.md and lockcluster join --help give, with
// real processes: a node started with neither --bootstrap nor --join
// waits and grants nothing; a join with a client token is refused (403),
// and so is one of a node that has raft state of its own (409); after
// the documented join and two leader changes every node has the same
// table. On a node that bootstrapped itself when started without flags,
// the first check fails, and the join then forked the table.
func TestAdmin_DocumentedJoinFlowCannotFork(t *testing.T) {
	c := newCluster(t)
	cl := c.client()
	ctx := t.Context()
	for i := range 3 {
		if _, ok, err := driverstest.Take(ctx, cl, fmt.Sprintf("before-%d", i), "o", 5*time.Minute); err != nil || !ok {
			t.Fatalf("acquire: %v %v", ok, err)
		}
	}

	// 1. The new node, started as the docs say: no flags.
	n4 := newNode(t, "n4")
	c.add(n4)
	lonely := c.clientAt(n4.httpAddr)
	poll.Until(t, 20*time.Second, "n4 reports it waits to be added", func() bool {
		st, err := lonely.NodeStatus(ctx, n4.httpAddr)
		return err == nil && st.Membership == api.MemberWaiting
	})
	if _, ok, err := driverstest.Take(ctx, lonely, "island", "o", time.Minute); ok || !errors.Is(err, drivers.ErrUnavailable) {
		t.Fatalf("a node waiting to be added answered an acquire: ok=%v err=%v; want unavailable", ok, err)
	}
	if body := getBody(t, "http://"+n4.httpAddr+"/readyz"); !strings.Contains(body, "waiting to be added") {
		t.Fatalf("/readyz of a waiting node: %s", body)
	}

	// The admin commands reach the three members only: the node that
	// waits, and the one with a cluster of its own below, are no members.
	members := c.addrs()[:3]
	join := []string{"join", "--id", "n4", "--raft-addr", n4.raftAddr, "--http-addr", n4.httpAddr}
	// 2. A worker's token may not change the membership.
	code, out := cliAt(t, members, clientToken, join...)
	if code != 77 || !strings.Contains(out, `lacks the "membership" right`) {
		t.Fatalf("join with a client token: exit %d\n%s", code, out)
	}
	// 3. A node with state of its own is refused, with the reason.
	n5 := newNode(t, "n5")
	n5.env = []string{"LOCKCLUSTER_BOOTSTRAP_SELF=true"}
	c.add(n5)
	poll.Until(t, 20*time.Second, "n5 leads its own cluster", func() bool {
		st, err := lonely.NodeStatus(ctx, n5.httpAddr)
		return err == nil && st.State == "leader"
	})
	code, out = cliAt(t, members, operatorToken, "join", "--id", "n5", "--raft-addr", n5.raftAddr, "--http-addr", n5.httpAddr)
	if code != 65 || !strings.Contains(out, "has raft state of its own") {
		t.Fatalf("join of a node with state: exit %d\n%s", code, out)
	}
	n5.kill()
	c.nodes = c.nodes[:4]

	// 4. The documented join.
	if code, out := cliAt(t, members, operatorToken, join...); code != 0 {
		t.Fatalf("join: exit %d\n%s", code, out)
	}
	if _, ok, err := driverstest.Take(ctx, cl, "after-join", "o", 5*time.Minute); err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	// 5. Two leader changes, then every node holds the same table.
	for range 2 {
		leader := c.waitLeader(30 * time.Second)
		leader.stop(t)
		c.waitLeader(30 * time.Second)
		c.start(leader)
	}
	c.waitLeader(30 * time.Second)
	poll.Until(t, 30*time.Second, "four nodes with the same applied index and four keys", func() bool {
		var applied []uint64
		for _, n := range c.nodes {
			st, err := lonely.NodeStatus(ctx, n.httpAddr)
			if err != nil || st.Keys != 4 {
				return false
			}
			applied = append(applied, st.AppliedIndex)
		}
		return slices.Min(applied) == slices.Max(applied)
	})
}

// cliAt is cli against the nodes at endpoints, with the token given.
func cliAt(t *testing.T, endpoints []string, token string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(cmd.Environ(), "LOCKCLUSTER_ENDPOINTS="+strings.Join(endpoints, ","), "LOCKCLUSTER_TOKEN="+token)
	out, err := cmd.CombinedOutput()
	code := exitCode(err)
	if code < 0 {
		t.Fatalf("%v: %v", args, err)
	}
	return code, string(out)
}

func getBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestBench_AgainstRealNodes is a smoke run of "lockcluster bench" on the
// cluster driver: both load shapes complete cycles without errors.
//
// Each shape gets a cluster of its own: both use the key bench:0, and an
// acquire that the end of the first run cut short in flight may have
// been granted after its caller gave up, which holds the key for its TTL
// (10 s) and would leave the second run waiting on it.
func TestBench_AgainstRealNodes(t *testing.T) {
	for _, keys := range []string{"0", "1"} {
		c := newCluster(t)
		code, out := cli(t, c, "bench", "--driver", "cluster", "--workers", "4", "--keys", keys,
			"--duration", "1s", "--warmup", "200ms")
		if code != 0 || !strings.Contains(out, "errors    0") || strings.Contains(out, "cycles    0 ") {
			t.Fatalf("bench --keys %s: exit %d\n%s", keys, code, out)
		}
		t.Logf("bench --keys %s:\n%s", keys, out)
	}
}
