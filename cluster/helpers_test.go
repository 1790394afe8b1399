package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zerotal/lock/internal/loopback"
	"github.com/zerotal/lock/internal/testkit/poll"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Test timing: fast enough for short tests, slow enough not to flap on two
// busy cores under -race.
const (
	testElection  = 400 * time.Millisecond
	testHeartbeat = 400 * time.Millisecond
	testLease     = 200 * time.Millisecond
	testGrace     = testElection + testLease
)

// testWriter routes logs to t.Log until the test ends.
type testWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func testLogger(t testing.TB, name string) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(func() { w.mu.Lock(); w.done = true; w.mu.Unlock() })
	level := slog.LevelWarn
	if os.Getenv("CLUSTER_TEST_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})).With("node", name)
}

func testConfig(t testing.TB, id string) Config {
	return Config{
		ID:                 id,
		DataDir:            t.TempDir(),
		RaftAddr:           "127.0.0.1:0",
		HTTPAddr:           "127.0.0.1:0",
		Logger:             testLogger(t, id),
		ElectionTimeout:    testElection,
		HeartbeatTimeout:   testHeartbeat,
		LeaderLeaseTimeout: testLease,
		TickInterval:       200 * time.Millisecond,
		RaftSecret:         testRaftSecret,
		BootstrapSelf:      true,
	}
}

// testRaftSecret is the raft secret of the tests' clusters.
const testRaftSecret = "test-raft-secret-0123456789"

// startNode starts a node and shuts it down when the test ends.
func startNode(t testing.TB, cfg Config) *Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := NewNode(ctx, cfg)
	if err != nil {
		t.Fatalf("start %s: %v", cfg.ID, err)
	}
	t.Cleanup(func() { shutdown(t, n) })
	return n
}

func shutdown(t testing.TB, n *Node) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Shutdown(ctx); err != nil {
		t.Errorf("shutdown %s: %v", n.ID(), err)
	}
}

// startCluster starts size nodes: the first bootstraps alone, the others
// join it over HTTP. It returns once every node knows a ready leader.
func startCluster(t testing.TB, size int, mod func(*Config)) []*Node {
	t.Helper()
	var nodes []*Node
	for i := 1; i <= size; i++ {
		cfg := testConfig(t, fmt.Sprintf("n%d", i))
		if i > 1 {
			cfg.Join, cfg.BootstrapSelf = nodes[0].HTTPAddr(), false
		}
		if mod != nil {
			mod(&cfg)
		}
		nodes = append(nodes, startNode(t, cfg))
		if i == 1 {
			waitLeader(t, nodes)
		}
	}
	waitLeader(t, nodes)
	return nodes
}

// startLedCluster is startCluster without a change of the configs, with
// the leader and a client.
func startLedCluster(t testing.TB, size int) ([]*Node, *Node, *apiClient) {
	t.Helper()
	nodes := startCluster(t, size, nil)
	return nodes, waitLeader(t, nodes), newClient(t)
}

// startBootstrapped starts n1..n3 bootstrapped with all three as peers
// (what `lockcluster dev` does), each config changed by mod (nil: none).
func startBootstrapped(t testing.TB, mod func(*Config)) ([]Peer, []*Node) {
	t.Helper()
	var peers []Peer
	for _, id := range []string{"n1", "n2", "n3"} {
		peers = append(peers, Peer{ID: id, RaftAddr: loopback.MustFreeAddr(t), HTTPAddr: loopback.MustFreeAddr(t)})
	}
	var nodes []*Node
	for _, p := range peers {
		cfg := testConfig(t, p.ID)
		cfg.RaftAddr, cfg.HTTPAddr, cfg.Bootstrap, cfg.BootstrapSelf = p.RaftAddr, p.HTTPAddr, peers, false
		if mod != nil {
			mod(&cfg)
		}
		nodes = append(nodes, startNode(t, cfg))
	}
	return peers, nodes
}

// waitLeader waits until one of nodes is the ready leader and every other
// running node knows it; it returns the leader.
func waitLeader(t testing.TB, nodes []*Node) *Node {
	t.Helper()
	var leader *Node
	waitFor(t, 15*time.Second, "a ready leader known to every node", func() bool {
		leader = nil
		for _, n := range nodes {
			if n.IsLeader() {
				leader = n
			}
		}
		if leader == nil {
			return false
		}
		for _, n := range nodes {
			ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
			err := n.WaitForLeader(ctx)
			cancel()
			if err != nil {
				return false
			}
		}
		return true
	})
	return leader
}

func followers(nodes []*Node, leader *Node) []*Node {
	var out []*Node
	for _, n := range nodes {
		if n != leader {
			out = append(out, n)
		}
	}
	return out
}

// waitFor polls cond until it holds or the timeout passes (poll.Until).
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, timeout, what, cond)
}

// apiClient calls the HTTP API of a node.
type apiClient struct {
	t     testing.TB
	http  *http.Client
	token string
}

func newClient(t testing.TB) *apiClient {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &apiClient{t: t, http: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// reply is a decoded answer: the status and the JSON object.
type reply struct {
	Status int
	Body   map[string]any
	Raw    string
}

func (r reply) str(k string) string { s, _ := r.Body[k].(string); return s }
func (r reply) num(k string) int64  { f, _ := r.Body[k].(float64); return int64(f) }
func (r reply) flag(k string) bool  { b, _ := r.Body[k].(bool); return b }

func (c *apiClient) do(addr, method, path string, body any) reply {
	c.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, "http://"+addr+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{Status: resp.StatusCode, Raw: string(raw)}
	_ = json.Unmarshal(raw, &r.Body)
	return r
}

func (c *apiClient) acquire(addr, key, owner string, ttl, wait time.Duration) reply {
	c.t.Helper()
	return c.do(addr, "POST", "/v1/acquire", map[string]any{"key": key, "owner": owner, "ttl_ms": ttl.Milliseconds(), "wait_ms": wait.Milliseconds()})
}

func (c *apiClient) release(addr, key, owner string) reply {
	c.t.Helper()
	return c.do(addr, "POST", "/v1/release", map[string]any{"key": key, "owner": owner})
}

func (c *apiClient) get(addr, key string) reply {
	c.t.Helper()
	return c.do(addr, "GET", "/v1/lock?key="+url.QueryEscape(key), nil)
}

func mustStatus(t testing.TB, r reply, status int, what string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("%s: status %d, want %d; body %s", what, r.Status, status, r.Raw)
	}
}

func containsLine(text, line string) bool {
	for _, l := range strings.Split(text, "\n") {
		if l == line {
			return true
		}
	}
	return false
}

// fsmSnapshot returns the bytes the node's FSM would persist now.
func fsmSnapshot(t testing.TB, n *Node) []byte {
	t.Helper()
	s, err := n.fsm.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	sink := &memSink{}
	if err := s.Persist(sink); err != nil {
		t.Fatal(err)
	}
	return sink.Bytes()
}

// memSink is an in-memory raft.SnapshotSink.
type memSink struct{ bytes.Buffer }

func (s *memSink) Close() error  { return nil }
func (s *memSink) Cancel() error { return nil }
func (s *memSink) ID() string    { return "mem" }

// isWaiter reports whether owner is queued for key on n.
func isWaiter(n *Node, key, owner string) bool {
	ok, err := n.fsm.IsQueuedOnceDelivered(context.Background(), key, owner)
	return ok && err == nil
}
