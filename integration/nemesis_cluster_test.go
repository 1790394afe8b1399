package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/internal/testkit/poll"
	"github.com/zerotal/lock/internal/testkit/tcpproxy"
)

// faultsBuild is the lockcluster binary built with -tags faults, made
// once, when the first nemesis test needs it.
var faultsBuild struct {
	once sync.Once
	path string
	err  error
}

func faultsBinary(t *testing.T) string {
	t.Helper()
	faultsBuild.once.Do(func() {
		path := filepath.Join(buildDir, "lockcluster-faults")
		cmd := exec.Command("go", "build", "-tags", "faults", "-o", path, "github.com/zerotal/lock/cmd/lockcluster")
		out, err := cmd.CombinedOutput()
		if err != nil {
			faultsBuild.err = fmt.Errorf("build lockcluster -tags faults: %v\n%s", err, out)
			return
		}
		faultsBuild.path = path
	})
	if faultsBuild.err != nil {
		t.Fatal(faultsBuild.err)
	}
	return faultsBuild.path
}

// faultCluster is a three-node cluster of the fault-injection build whose
// node-to-node connections (raft and HTTP forwarding) all go through
// proxies in the test process, one per direction of each link, and whose
// clocks the test can skew at run time.
type faultCluster struct {
	*testCluster
	// links[i][j] carries node i's connections to node j (raft, http).
	links     [3][3][]*tcpproxy.Proxy
	clockFile [3]string
	// offset is each node's wall-clock offset, hours apart, for the whole
	// run: only the origin of a new cluster's time comes from a wall
	// clock, and it must not matter whose.
	offset [3]time.Duration
	admin  *client.Client

	mu     sync.Mutex
	paused [3]bool // SIGSTOPped: do not ask it for its status
}

func newFaultCluster(t *testing.T) *faultCluster {
	t.Helper()
	return newFaultClusterOn(t, envRaftLog(t))
}

// envRaftLog is the log store ZEROTAL_RAFT_LOG names (wal or bolt) for
// the runs that do not choose one; empty: the agent's default.
func envRaftLog(t *testing.T) string {
	t.Helper()
	v := os.Getenv("ZEROTAL_RAFT_LOG")
	if v != "" && v != "wal" && v != "bolt" {
		t.Fatalf("ZEROTAL_RAFT_LOG=%q: want wal or bolt", v)
	}
	return v
}

// newFaultClusterOn is newFaultCluster with the raft log in raftLog.
func newFaultClusterOn(t *testing.T, raftLog string) *faultCluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts lockcluster processes")
	}
	bin := faultsBinary(t)
	c := &faultCluster{testCluster: &testCluster{t: t}}
	var peers []string
	for i := range 3 {
		n := newNode(t, fmt.Sprintf("n%d", i+1))
		n.bin, n.raftLog = bin, raftLog
		peers = append(peers, n.id+"="+n.raftAddr+"="+n.httpAddr)
		c.nodes = append(c.nodes, n)
		c.clockFile[i] = filepath.Join(t.TempDir(), "clock")
		c.offset[i] = []time.Duration{3 * time.Hour, -3 * time.Hour, 90 * time.Minute}[i]
		if err := c.setRate(i, 1); err != nil {
			t.Fatal(err)
		}
	}
	// Registered first, so it runs last: the nodes are gone by then.
	t.Cleanup(func() {
		for i := range 3 {
			for j := range 3 {
				for _, p := range c.links[i][j] {
					p.Close()
				}
			}
		}
	})
	for i, n := range c.nodes {
		var dial []string
		for j, m := range c.nodes {
			if i == j {
				continue
			}
			for _, target := range []string{m.raftAddr, m.httpAddr} {
				p, err := tcpproxy.Start(target, tcpproxy.Blackhole)
				if err != nil {
					t.Fatal(err)
				}
				c.links[i][j] = append(c.links[i][j], p)
				dial = append(dial, target+"="+p.Addr())
			}
		}
		n.bootstrap = strings.Join(peers, ",")
		n.env = []string{
			"LOCKCLUSTER_FAULT_DIAL=" + strings.Join(dial, ","),
			"LOCKCLUSTER_FAULT_CLOCK_FILE=" + c.clockFile[i],
		}
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			n.kill() // SIGKILL ends a SIGSTOPped process too
		}
		if t.Failed() {
			for _, n := range c.nodes {
				b, _ := os.ReadFile(n.logPath)
				t.Logf("---- log of %s (%s) ----\n%s", n.id, n.httpAddr, tail(b, 200))
			}
		}
	})
	admin, err := client.New(client.Config{Addrs: c.addrs(), Token: operatorToken, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c.admin = admin
	t.Cleanup(func() { _ = admin.Close() })
	for _, n := range c.nodes {
		c.start(n)
	}
	if _, err := c.leader(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	// The run is on the store it names: a WAL directory exactly when wal.
	for _, n := range c.nodes {
		_, err := os.Stat(filepath.Join(n.dataDir, "wal"))
		if hasWAL := err == nil; raftLog != "" && hasWAL != (raftLog == "wal") {
			t.Fatalf("%s: raft log %s, but wal/ exists = %v", n.id, raftLog, hasWAL)
		}
	}
	return c
}

// tail is the last n lines of b.
func tail(b []byte, n int) string {
	lines := strings.Split(string(b), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("... %d lines cut ...", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// sendSignal delivers sig to n's process (by PID) without waiting.
func (n *node) sendSignal(sig syscall.Signal) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.cmd.Process == nil {
		return
	}
	select {
	case <-n.done:
		return
	default:
	}
	_ = n.cmd.Process.Signal(sig)
}

// pid is n's process id, 0 when it is not running.
func (n *node) pid() int {
	if !n.running() {
		return 0
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd.Process.Pid
}

// rssKiB is the resident set size of n's process, from /proc.
func (n *node) rssKiB() int { return n.procStatusKiB("VmRSS:") }

// anonKiB is the anonymous part of the resident set: Go's heap and the
// stacks, without the pages of the memory-mapped raft.db (which RSS counts
// and which grow with the log until a snapshot compacts it). A leak shows
// here.
func (n *node) anonKiB() int { return n.procStatusKiB("RssAnon:") }

// procStatusKiB reads one kB field of /proc/PID/status.
func (n *node) procStatusKiB(field string) int {
	pid := n.pid()
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			v, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return v
		}
	}
	return 0
}

// leader polls until a running, unpaused node says it leads and a
// majority of the nodes that answer name it; it returns its index.
func (c *faultCluster) leader(timeout time.Duration) (int, error) {
	leaderIdx := -1
	if poll.Wait(timeout, func() bool { leaderIdx = c.majorityLeader(); return leaderIdx >= 0 }) {
		return leaderIdx, nil
	}
	return -1, fmt.Errorf("no leader agreed by a majority within %v", timeout)
}

// majorityLeader asks every running, unpaused node once and returns the
// index of one that says it leads and that a majority of those answering
// name, or -1.
func (c *faultCluster) majorityLeader() int {
	votes := map[string]int{}
	leaderIdx := -1
	for i, n := range c.nodes {
		c.mu.Lock()
		paused := c.paused[i]
		c.mu.Unlock()
		if paused || !n.running() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		st, err := c.admin.NodeStatus(ctx, n.httpAddr)
		cancel()
		if err != nil {
			continue
		}
		if st.LeaderID != "" {
			votes[st.LeaderID]++
		}
		if strings.EqualFold(st.State, "leader") {
			leaderIdx = i
		}
	}
	if leaderIdx >= 0 && votes[c.nodes[leaderIdx].id] >= 2 {
		return leaderIdx
	}
	return -1
}

// partition cuts (or heals) both directions of the links between i and
// each of others.
func (c *faultCluster) partition(i int, others []int, cut bool) {
	for _, j := range others {
		for _, pair := range [][2]int{{i, j}, {j, i}} {
			for _, p := range c.links[pair[0]][pair[1]] {
				if cut {
					p.Cut()
				} else {
					p.Heal()
				}
			}
		}
	}
}

// healAll ends every partition.
func (c *faultCluster) healAll() {
	for i := range 3 {
		c.partition(i, []int{0, 1, 2}[i+1:], false)
	}
}

// setRate sets how fast node i's monotonic clock runs, at run time
// (1: as fast as the host's); its wall-clock offset stays.
func (c *faultCluster) setRate(i int, rate float64) error {
	content := fmt.Sprintf("offset=%s rate=%g\n", c.offset[i], rate)
	tmp := c.clockFile[i] + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, c.clockFile[i])
}

// pause sends SIGSTOP (true) or SIGCONT (false) to node i.
func (c *faultCluster) pause(i int, stop bool) {
	c.mu.Lock()
	c.paused[i] = stop
	c.mu.Unlock()
	if stop {
		c.nodes[i].sendSignal(syscall.SIGSTOP)
	} else {
		c.nodes[i].sendSignal(syscall.SIGCONT)
	}
}

// others is every node index but i.
func others(i int) []int {
	var out []int
	for j := range 3 {
		if j != i {
			out = append(out, j)
		}
	}
	return out
}
