package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/internal/loopback"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// node is one lockcluster agent process and what it needs to restart.
type node struct {
	id, raftAddr, httpAddr, dataDir, logPath string
	// bootstrap or join: how the node finds its cluster on first start.
	bootstrap, join string
	// bin is the executable (empty: binary); env is added to the
	// process's environment (fault injection).
	bin string
	env []string
	// raftLog is passed as --raft-log (empty: the agent's default).
	raftLog string

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process exited
	waitErr error         // what Wait returned, once done is closed
}

// testCluster is three agent processes on loopback.
type testCluster struct {
	t     *testing.T
	nodes []*node
}

// newCluster starts three nodes that bootstrap one cluster, waits for a
// leader, and stops every process (by PID) when the test ends; node logs
// are printed when the test failed.
func newCluster(t *testing.T) *testCluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts lockcluster processes")
	}
	c := &testCluster{t: t}
	var peers []string
	for i := range 3 {
		n := newNode(t, fmt.Sprintf("n%d", i+1))
		peers = append(peers, n.id+"="+n.raftAddr+"="+n.httpAddr)
		c.nodes = append(c.nodes, n)
	}
	for _, n := range c.nodes {
		n.bootstrap = strings.Join(peers, ",")
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			n.kill()
		}
		if t.Failed() {
			for _, n := range c.nodes {
				b, _ := os.ReadFile(n.logPath)
				t.Logf("---- log of %s (%s) ----\n%s", n.id, n.httpAddr, b)
			}
		}
	})
	for _, n := range c.nodes {
		c.start(n)
	}
	c.waitLeader(30 * time.Second)
	return c
}

// start launches n's agent process (again, after a stop: its state is on
// disk and the bootstrap flag is then ignored).
func (c *testCluster) start(n *node) {
	c.t.Helper()
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		c.t.Fatal(err)
	}
	args := []string{"agent", "--id", n.id, "--data-dir", n.dataDir,
		"--raft-addr", n.raftAddr, "--http-addr", n.httpAddr, "--log-level", "debug"}
	if n.raftLog != "" {
		args = append(args, "--raft-log", n.raftLog)
	}
	if n.bootstrap != "" {
		args = append(args, "--bootstrap", n.bootstrap)
	}
	if n.join != "" {
		args = append(args, "--join", n.join)
	}
	bin := binary
	if n.bin != "" {
		bin = n.bin
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// The nodes' credentials: the raft secret and the token file (the
	// variable LOCKCLUSTER_TOKEN the tests set for their workers is not
	// the node's).
	cmd.Env = append(os.Environ(), "LOCKCLUSTER_TOKEN=", "LOCKCLUSTER_RAFT_SECRET="+raftSecret, "LOCKCLUSTER_TOKEN_FILE="+tokenFile)
	cmd.Env = append(cmd.Env, n.env...)
	if err := cmd.Start(); err != nil {
		logf.Close()
		c.t.Fatalf("start %s: %v", n.id, err)
	}
	done := make(chan struct{})
	go func() {
		err := cmd.Wait()
		logf.Close()
		n.mu.Lock()
		n.waitErr = err
		n.mu.Unlock()
		close(done)
	}()
	n.mu.Lock()
	n.cmd, n.done = cmd, done
	n.mu.Unlock()
}

// signal sends sig to n's process (by PID) and waits for it to exit.
func (n *node) signal(sig syscall.Signal, wait time.Duration) error {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	default:
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
		return nil
	case <-time.After(wait):
		return fmt.Errorf("%s (pid %d) still running %s after %v", n.id, cmd.Process.Pid, wait, sig)
	}
}

// kill stops n at once, like a crash.
func (n *node) kill() { _ = n.signal(syscall.SIGKILL, 10*time.Second) }

// stop asks n to shut down gracefully.
func (n *node) stop(t *testing.T) {
	t.Helper()
	if err := n.signal(syscall.SIGTERM, 20*time.Second); err != nil {
		t.Errorf("graceful stop: %v", err)
		// SIGQUIT makes the Go runtime write every goroutine's stack to
		// the node's log: where the stop hung.
		_ = n.signal(syscall.SIGQUIT, 5*time.Second)
		n.kill()
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.waitErr != nil {
		t.Errorf("%s after SIGTERM: %v, want exit status 0", n.id, n.waitErr)
	}
}

func (c *testCluster) addrs() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.httpAddr
	}
	return out
}

// client returns a client of the cluster with a worker's token (lock
// rights only), closed when the test ends.
func (c *testCluster) client() *client.Client { return c.clientWith(clientToken) }

// clientWith returns a client of the cluster with token, closed when the
// test ends.
func (c *testCluster) clientWith(token string) *client.Client {
	c.t.Helper()
	return c.newClient(client.Config{Addrs: c.addrs(), Token: token})
}

// clientAt returns a client of the node at addr alone, with a worker's
// token and a short timeout, closed when the test ends.
func (c *testCluster) clientAt(addr string) *client.Client {
	c.t.Helper()
	return c.newClient(client.Config{Addrs: []string{addr}, Token: clientToken, Timeout: 2 * time.Second})
}

func (c *testCluster) newClient(cfg client.Config) *client.Client {
	c.t.Helper()
	cl, err := client.New(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// newNode is a node named id on fresh loopback ports, with a data dir and
// a log file of its own.
func newNode(t *testing.T, id string) *node {
	return &node{id: id, raftAddr: loopback.MustFreeAddr(t), httpAddr: loopback.MustFreeAddr(t), dataDir: t.TempDir(),
		logPath: filepath.Join(t.TempDir(), id+".log")}
}

// add starts n beside the cluster's nodes; it is stopped, and its log
// printed, with theirs.
func (c *testCluster) add(n *node) {
	c.nodes = append(c.nodes, n)
	c.start(n)
}

// waitLeader polls the nodes' status until a running node reports itself
// leader with every running node agreeing, and returns it.
func (c *testCluster) waitLeader(timeout time.Duration) *node {
	c.t.Helper()
	cl := c.client()
	var leader *node
	poll.Until(c.t, timeout, "a leader every running node agrees on", func() bool {
		leader = c.agreedLeader(cl)
		return leader != nil
	})
	return leader
}

// agreedLeader asks every running node once and returns the one that
// leads when every running node names a leader, or nil.
func (c *testCluster) agreedLeader(cl *client.Client) *node {
	var leader *node
	for _, n := range c.nodes {
		if !n.running() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := cl.NodeStatus(ctx, n.httpAddr)
		cancel()
		if err != nil || st.LeaderID == "" {
			return nil
		}
		if strings.EqualFold(st.State, "leader") {
			leader = n
		}
	}
	return leader
}

// waitExit waits for n to exit on its own, with a non-zero status and
// a log that says what.
func (n *node) waitExit(t *testing.T, timeout time.Duration, says string) {
	t.Helper()
	n.mu.Lock()
	done := n.done
	n.mu.Unlock()
	select {
	case <-done:
	case <-time.After(timeout):
		t.Fatalf("%s still runs after %v; want it to exit (%s)", n.id, timeout, says)
	}
	n.mu.Lock()
	err := n.waitErr
	n.mu.Unlock()
	b, _ := os.ReadFile(n.logPath)
	if err == nil || !strings.Contains(string(b), says) {
		t.Fatalf("%s exited with %v; want a failure and a log saying %q:\n%s", n.id, err, says, b)
	}
}

func (n *node) running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return false
	}
	select {
	case <-n.done:
		return false
	default:
		return true
	}
}
