package cluster

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/internal/loopback"
)

func TestConfig_RefusesInconsistentConfiguration(t *testing.T) {
	base := func() Config {
		return Config{ID: "n1", DataDir: t.TempDir(), RaftAddr: "127.0.0.1:7001", HTTPAddr: "127.0.0.1:8001"}
	}
	cases := []struct {
		name    string
		mod     func(*Config)
		mention string
	}{
		{"no id", func(c *Config) { c.ID = "" }, "ID is required"},
		{"id with space", func(c *Config) { c.ID = "a b" }, "without spaces"},
		{"no data dir", func(c *Config) { c.DataDir = "" }, "DataDir is required"},
		{"no raft addr", func(c *Config) { c.RaftAddr = "" }, "RaftAddr"},
		{"raft addr without port", func(c *Config) { c.RaftAddr = "127.0.0.1" }, "RaftAddr"},
		{"no http addr", func(c *Config) { c.HTTPAddr = "" }, "HTTPAddr"},
		{"bootstrap and join", func(c *Config) {
			c.Bootstrap = []Peer{{ID: "n1", RaftAddr: "127.0.0.1:7001"}}
			c.Join = "127.0.0.1:8002"
		}, "exclusive"},
		{"bootstrap without self", func(c *Config) { c.Bootstrap = []Peer{{ID: "n2", RaftAddr: "127.0.0.1:7002"}} }, "do not include this node"},
		{"bootstrap self elsewhere", func(c *Config) { c.Bootstrap = []Peer{{ID: "n1", RaftAddr: "127.0.0.1:7009"}} }, "advertises raft at"},
		{"bootstrap self at the bind address, not the advertised one", func(c *Config) {
			c.RaftAdvertise = "127.0.0.1:9001"
			c.Bootstrap = []Peer{{ID: "n1", RaftAddr: "127.0.0.1:7001"}}
		}, `advertises raft at "127.0.0.1:9001"`},
		{"raft on all interfaces, nothing advertised", func(c *Config) { c.RaftAddr, c.RaftInsecure = "0.0.0.0:7001", true }, "set RaftAdvertise"},
		{"raft on all IPv6 interfaces, nothing advertised", func(c *Config) { c.RaftAddr, c.RaftInsecure = "[::]:7001", true }, "set RaftAdvertise"},
		{"raft on an empty host, nothing advertised", func(c *Config) { c.RaftAddr, c.RaftInsecure = ":7001", true }, "set RaftAdvertise"},
		{"raft advertises all interfaces", func(c *Config) { c.RaftAdvertise = "0.0.0.0:7001" }, "RaftAdvertise: \"0.0.0.0:7001\" names all interfaces"},
		{"raft advertises port 0", func(c *Config) { c.RaftAdvertise = "127.0.0.1:0" }, "port from 1 to 65535"},
		{"raft advertise without port", func(c *Config) { c.RaftAdvertise = "node1.example" }, "RaftAdvertise"},
		{"http advertises all interfaces", func(c *Config) { c.HTTPAdvertise = "[::]:8001" }, "HTTPAdvertise"},
		{"bootstrap duplicate id", func(c *Config) {
			c.Bootstrap = []Peer{{ID: "n1", RaftAddr: "127.0.0.1:7001"}, {ID: "n1", RaftAddr: "127.0.0.1:7002"}}
		}, "listed twice"},
		{"bootstrap duplicate addr", func(c *Config) {
			c.Bootstrap = []Peer{{ID: "n1", RaftAddr: "127.0.0.1:7001"}, {ID: "n2", RaftAddr: "127.0.0.1:7001"}}
		}, "listed twice"},
		{"lease above heartbeat", func(c *Config) {
			c.HeartbeatTimeout = 100 * time.Millisecond
			c.LeaderLeaseTimeout = 200 * time.Millisecond
		}, "LeaderLeaseTimeout"},
		{"heartbeat above election", func(c *Config) {
			c.ElectionTimeout = 100 * time.Millisecond
			c.HeartbeatTimeout = 200 * time.Millisecond
		}, "HeartbeatTimeout"},
		{"tiny timeouts", func(c *Config) { c.ElectionTimeout = time.Millisecond }, "at least 5ms"},
		{"negative limits", func(c *Config) { c.MaxKeys = -2 }, "MaxKeys (-2)"},
		{"partial TLS", func(c *Config) { c.TLS.CertFile = "node.pem" }, "KeyFile"},
		{"cluster ID with a space", func(c *Config) { c.ClusterID = "my cluster" }, "printable ASCII"},
		{"negative connection cap", func(c *Config) { c.MaxConns = -2 }, "MaxConns (-2)"},
		{"connection cap under the waits", func(c *Config) { c.MaxConns = 100 }, "must exceed MaxWaits (4096)"},
		{"negative read timeout", func(c *Config) { c.HTTPReadTimeout = -time.Second }, "HTTPReadTimeout"},
		{"short raft secret", func(c *Config) { c.RaftSecret = "short" }, "RaftSecret is 5 bytes"},
		{"unknown raft log store", func(c *Config) { c.RaftLog = "leveldb" }, `RaftLog "leveldb" must be "bolt" or "wal"`},
		{"raft on a LAN address without auth", func(c *Config) { c.RaftAddr = "10.1.2.3:7101" }, "--raft-secret"},
		{"raft on a host name without auth", func(c *Config) { c.RaftAddr = "node1.example:7101" }, "RaftInsecure"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base()
			tc.mod(&cfg)
			n, err := NewNode(t.Context(), cfg)
			if err == nil {
				_ = n.Shutdown(context.Background())
				t.Fatal("NewNode accepted the configuration")
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("error %q does not mention %q", err, tc.mention)
			}
		})
	}
}

func TestConfig_DefaultsDoNotChangeCallersConfig(t *testing.T) {
	cfg := testConfig(t, "n1")
	cfg.ElectionTimeout, cfg.HeartbeatTimeout, cfg.LeaderLeaseTimeout = 0, 0, 0
	before := cfg
	n := startNode(t, cfg)
	if cfg.ElectionTimeout != 0 || cfg.TickInterval != before.TickInterval || cfg.Logger != before.Logger {
		t.Fatal("NewNode wrote defaults into the caller's Config")
	}
	if n.cfg.ElectionTimeout != DefaultElectionTimeout || n.cfg.LeaderLeaseTimeout != DefaultLeaderLeaseTimeout {
		t.Fatalf("defaults not applied: %+v", n.cfg)
	}
}

func TestNode_SecondNodeOnSameDataDirFails(t *testing.T) {
	cfg := testConfig(t, "n1")
	startNode(t, cfg)
	_, err := NewNode(t.Context(), cfg)
	if err == nil || !strings.Contains(err.Error(), "data dir") {
		t.Fatalf("second node on the same data dir: %v", err)
	}
}

// A node restarted from its data dir keeps its locks, fences and time:
// fences keep growing, and the remaining TTL grows by no more than the
// grace. On each log store.
func TestNode_RestartFromDiskKeepsLocksAndFences(t *testing.T) {
	for _, raftLog := range raftLogs {
		t.Run(raftLog, func(t *testing.T) { testRestartFromDiskKeepsLocksAndFences(t, raftLog) })
	}
}

func testRestartFromDiskKeepsLocksAndFences(t *testing.T, raftLog string) {
	cfg := testConfig(t, "n1")
	cfg.RaftAddr = loopback.MustFreeAddr(t)
	cfg.RaftLog = raftLog
	cfg.SnapshotThreshold = 8 // also exercise snapshot + restore on start
	c := newClient(t)

	n := startNode(t, cfg)
	waitLeader(t, []*Node{n})
	var fence int64
	for i := 0; i < 20; i++ {
		r := c.acquire(n.HTTPAddr(), "k", "a", time.Minute, 0)
		mustStatus(t, r, http.StatusOK, "acquire")
		fence = r.num("fence")
	}
	before := c.get(n.HTTPAddr(), "k").num("remaining_ms")
	if err := n.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	shutdown(t, n)

	n = startNode(t, cfg)
	waitLeader(t, []*Node{n})
	r := c.get(n.HTTPAddr(), "k")
	mustStatus(t, r, http.StatusOK, "get after restart")
	if r.str("owner") != "a" || r.num("fence") != fence {
		t.Fatalf("lock after restart = %s, want owner a fence %d", r.Raw, fence)
	}
	if rem := r.num("remaining_ms"); rem > before+testGrace.Milliseconds()+250 {
		t.Fatalf("remaining TTL reset by a restart: %dms before, %dms after", before, rem)
	}
	r = c.acquire(n.HTTPAddr(), "other", "b", time.Minute, 0)
	if r.num("fence") <= fence {
		t.Fatalf("fence after restart %d is not above %d", r.num("fence"), fence)
	}
}

// A cluster bootstrapped with every peer (what `lockcluster dev` does)
// elects a leader, and followers learn its HTTP address from the log.
func TestNode_BootstrapWithPeersFormsCluster(t *testing.T) {
	peers, nodes := startBootstrapped(t, nil)
	leader := waitLeader(t, nodes)
	c := newClient(t)
	for _, n := range followers(nodes, leader) {
		if n.HTTPAddr() == "" {
			t.Fatal("no HTTP address")
		}
		r := c.acquire(n.HTTPAddr(), "boot-"+n.ID(), "o", time.Second, 0)
		mustStatus(t, r, http.StatusOK, "acquire through "+n.ID())
	}
	for _, p := range peers {
		if got, ok := leader.fsm.Member(p.ID); !ok || got != p.HTTPAddr {
			t.Fatalf("member %s = %q, want %q", p.ID, got, p.HTTPAddr)
		}
	}
}

func TestNode_LeaveRemovesVoter(t *testing.T) {
	nodes, leader, c := startLedCluster(t, 3)
	gone := followers(nodes, leader)[1]
	r := c.do(followers(nodes, leader)[0].HTTPAddr(), "POST", "/v1/leave", map[string]any{"id": gone.ID()})
	mustStatus(t, r, http.StatusOK, "leave")
	shutdown(t, gone)
	st := c.do(leader.HTTPAddr(), "GET", "/v1/status", nil)
	if peers, _ := st.Body["peers"].([]any); len(peers) != 2 {
		t.Fatalf("peers after leave = %s", st.Raw)
	}
	if _, ok := leader.fsm.Member(gone.ID()); ok {
		t.Fatal("the member map still lists the node that left")
	}
	// Two voters left, both up: writes still commit.
	mustStatus(t, c.acquire(leader.HTTPAddr(), "k", "o", time.Second, 0), http.StatusOK, "acquire after leave")
}

func TestAdvertiseAddr(t *testing.T) {
	cases := []struct{ override, bound, raft, want string }{
		{"", "127.0.0.1:8080", "127.0.0.1:7000", "127.0.0.1:8080"},
		{"", "0.0.0.0:8080", "10.0.0.5:7000", "10.0.0.5:8080"},
		{"", "[::]:8080", "10.0.0.5:7000", "10.0.0.5:8080"},
		{"", ":8080", "node1.lan:7000", "node1.lan:8080"},
		{"lb.example:80", "0.0.0.0:8080", "10.0.0.5:7000", "lb.example:80"},
	}
	for _, c := range cases {
		if got := advertiseAddr(c.override, c.bound, c.raft); got != c.want {
			t.Errorf("advertiseAddr(%q, %q, %q) = %q, want %q", c.override, c.bound, c.raft, got, c.want)
		}
	}
}

// A member restarting from its data dir does not need the join target: the
// membership is in its log already.
func TestNode_RestartedMemberDoesNotJoinAgain(t *testing.T) {
	first := testConfig(t, "n1")
	first.RaftAddr = loopback.MustFreeAddr(t)
	n1 := startNode(t, first)
	waitLeader(t, []*Node{n1})
	cfg := testConfig(t, "n2")
	cfg.RaftAddr, cfg.Join, cfg.BootstrapSelf = loopback.MustFreeAddr(t), n1.HTTPAddr(), false
	n2 := startNode(t, cfg)
	waitLeader(t, []*Node{n1, n2})
	shutdown(t, n2)

	cfg.Join = loopback.MustFreeAddr(t) // nobody listens there
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	n2, err := NewNode(ctx, cfg)
	if err != nil {
		t.Fatalf("restart with an unreachable join target: %v", err)
	}
	t.Cleanup(func() { shutdown(t, n2) })
	waitLeader(t, []*Node{n1, n2})
	c := newClient(t)
	mustStatus(t, c.acquire(n2.HTTPAddr(), "k", "o", time.Second, 0), http.StatusOK, "acquire through the restarted member")
}
