//go:build unix

package main

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zerotal/lock/internal/loopback"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// threeAgents are a three-node cluster of agent processes, bootstrapped
// together, logging at info.
type threeAgents struct {
	ids, https, peers []string
	dirs              []string
	procs             []*proc
}

func startThreeAgents(t *testing.T) *threeAgents {
	t.Helper()
	skipShort(t, "starts agent processes")
	c := &threeAgents{}
	for i := 1; i <= 3; i++ {
		h, r := loopback.MustFreeAddr(t), loopback.MustFreeAddr(t)
		c.ids = append(c.ids, fmt.Sprintf("n%d", i))
		c.https = append(c.https, h)
		c.peers = append(c.peers, fmt.Sprintf("n%d=%s=%s", i, r, h))
		c.dirs = append(c.dirs, t.TempDir())
		c.procs = append(c.procs, nil)
	}
	for i := range c.ids {
		c.start(t, i)
	}
	return c
}

// start starts node i (again) on its data dir.
func (c *threeAgents) start(t *testing.T, i int) {
	t.Helper()
	p := strings.Split(c.peers[i], "=")
	c.procs[i] = startProc(t, nil, "agent", "--id", c.ids[i], "--data-dir", c.dirs[i], "--raft-addr", p[1], "--http-addr", p[2],
		"--bootstrap", strings.Join(c.peers, ","), "--log-level", "info")
}

// leader waits until every node answers and names the same leader, and
// returns its index.
func (c *threeAgents) leader(t *testing.T) int {
	t.Helper()
	leader := -1
	poll.Until(t, 30*time.Second, "a leader every node knows", func() bool {
		_, stdout, _ := runCLI(t, map[string]string{"LOCKCLUSTER_ENDPOINTS": strings.Join(c.https, ",")}, "status", "--timeout", "2s")
		leader = -1
		named := map[string]int{}
		for _, line := range strings.Split(stdout, "\n") {
			f := strings.Fields(line)
			for i, h := range c.https {
				if len(f) > 3 && f[0] == h {
					named[f[3]]++
					if f[2] == "leader" {
						leader = i
					}
				}
			}
		}
		return leader >= 0 && named[c.ids[leader]] == len(c.https)
	})
	return leader
}

// stop sends node i SIGTERM and waits for its exit, which must be 0.
func (c *threeAgents) stop(t *testing.T, i int) {
	t.Helper()
	if err := c.procs[i].cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := c.procs[i].wait(t); code != 0 {
		t.Fatalf("%s exited %d after SIGTERM:\n%s", c.ids[i], code, c.procs[i].stderr)
	}
}

// errorLines are the ERROR lines of every process node i ran so far.
func errorLines(logs ...string) []string {
	var out []string
	for _, l := range logs {
		for _, line := range strings.Split(l, "\n") {
			if strings.Contains(line, "level=ERROR") {
				out = append(out, line)
			}
		}
	}
	return out
}

// Ordinary stops and restarts log nothing at ERROR (docs/CLI.md: an
// operator sees an incident there): a follower stopped with SIGTERM and
// started again, while the leader keeps trying to reach it, and then
// the leader stopped with SIGTERM, then every other node. Before, the
// leader logged its stop at ERROR once, and several ERROR lines a second
// ("failed to appendEntries to", "failed to heartbeat to") while the
// follower was away.
func TestAgent_OrdinaryStopsLogNoError(t *testing.T) {
	c := startThreeAgents(t)
	leader := c.leader(t)
	follower := (leader + 1) % 3
	var logs []string
	// The leader tries the stopped follower for a while: until raft has
	// warned that it failed to contact it, which it does once the
	// follower has been silent for a leader lease (raft's heartbeats and
	// appends to it have failed several times by then). raft says it at
	// WARN only while the silence is under three leases, DEBUG after: the
	// lines are counted from before the stop, since a loaded machine may
	// print them all while the stop is still being waited for.
	contact := "server-id=" + c.ids[follower]
	leaderLog := c.procs[leader].stderr
	before := strings.Count(leaderLog.String(), contact)
	c.stop(t, follower)
	logs = append(logs, c.procs[follower].stderr.String())
	poll.Until(t, 60*time.Second, "the leader to warn that it failed to contact the follower", func() bool {
		return strings.Count(leaderLog.String(), contact) > before
	})
	c.start(t, follower)
	if l := c.leader(t); l != leader {
		t.Logf("the leadership moved to %s", c.ids[l])
		leader = l
	}
	c.stop(t, leader)
	for i := range c.procs {
		if i != leader {
			c.stop(t, i)
		}
	}
	for _, p := range c.procs {
		logs = append(logs, p.stderr.String())
	}
	if errs := errorLines(logs...); len(errs) > 0 {
		t.Fatalf("%d ERROR lines in ordinary stops and a restart, the first:\n%s", len(errs), strings.Join(errs[:min(len(errs), 5)], "\n"))
	}
}
