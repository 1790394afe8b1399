package cluster

import (
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zerotal/lock/cluster/access"
	"github.com/zerotal/lock/cluster/peer"
	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
	"github.com/zerotal/lock/internal/logbridge"
	"github.com/zerotal/lock/internal/testkit/syncbuf"
)

// attacker is a raft.NetworkTransport on this package's own stream layer,
// speaking the handshake of a node that knows the cluster ID (it is no
// secret: the default is "lockcluster") and, as given, a secret.
func newAttacker(t *testing.T, clusterID, secret string) *raft.NetworkTransport {
	t.Helper()
	var key []byte
	if secret != "" {
		key = []byte(secret)
	}
	sl, err := peer.NewStreamLayer(peer.Config{Bind: "127.0.0.1:0", ClusterID: clusterID, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	tr := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: sl, MaxPool: 1, Timeout: 5 * time.Second, Logger: logbridge.HCLog(testLogger(t, "attacker"), "transport"),
	})
	t.Cleanup(func() {
		tr.CloseStreams()
		_ = tr.Close()
	})
	return tr
}

// raftView is what an outsider could change: the term, the leader and
// the lock table.
type raftView struct {
	term   uint64
	leader raft.ServerID
	owner  string
	fence  uint64
}

func viewOf(t *testing.T, n *Node, key string) raftView {
	t.Helper()
	_, leader := n.raft.LeaderWithID()
	v := raftView{term: n.raft.CurrentTerm(), leader: leader}
	info, ok, err := n.fsm.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		v.owner, v.fence = info.Owner, info.Fence
	}
	return v
}

// forgedAppend is what a deposing outsider sends: a higher term, entries
// that force-release key and grant it to mallory, and a commit index that
// makes the target apply them at once.
func forgedAppend(t *testing.T, n *Node, key string) *raft.AppendEntriesRequest {
	t.Helper()
	last := n.raft.LastIndex()
	var prev raft.Log
	if err := n.stores.LogStore.GetLog(last, &prev); err != nil {
		t.Fatal(err)
	}
	term := n.raft.CurrentTerm() + 10
	now := time.Now().UnixNano()
	var entries []*raft.Log
	for i, e := range []fsm.Entry{
		{Op: engine.OpForceRelease, Key: key, Now: now},
		{Op: engine.OpAcquire, Key: key, Owner: "mallory", TTL: time.Hour, Now: now},
	} {
		data, err := fsm.Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, &raft.Log{Index: last + 1 + uint64(i), Term: term, Type: raft.LogCommand, Data: data})
	}
	return &raft.AppendEntriesRequest{
		RPCHeader:         raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("mallory"), Addr: []byte("127.0.0.1:1")},
		Term:              term,
		PrevLogEntry:      last,
		PrevLogTerm:       prev.Term,
		Entries:           entries,
		LeaderCommitIndex: last + uint64(len(entries)),
	}
}

// An outsider that reaches the raft port with a real raft transport but
// without the cluster's secret is refused before raft sees its RPC: a
// forged AppendEntries with a higher term neither deposes the leader nor
// changes the term or the lock table, and the node keeps serving.
//
// Every lock client holds the API token: with it as the handshake's key
// (what a node without RaftSecret used before), a client deposes the
// leader and applies a grant of its choosing. It is no raft key now.
func TestRaftAuth_OutsiderCannotWriteTheLog(t *testing.T) {
	const tokenValue = "the-cluster-api-token-0123456789"
	for _, tc := range []struct{ name, attackerSecret string }{
		{"no secret", ""},
		{"wrong secret", "a-guessed-raft-secret-0123456789"},
		{"the API token", tokenValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := startCluster(t, 1, func(c *Config) { c.Token = tokenValue })
			n := nodes[0]
			c := newClient(t)
			c.token = tokenValue
			mustStatus(t, c.acquire(n.HTTPAddr(), "k", "alice", time.Hour, 0), 200, "alice acquires k")
			before := viewOf(t, n, "k")
			if _, owner, _ := access.SplitOwner(before.owner); owner != "alice" {
				t.Fatalf("k is held by %q, want alice (recorded behind the token's credential)", before.owner)
			}

			tr := newAttacker(t, n.cfg.ClusterID, tc.attackerSecret)
			var resp raft.AppendEntriesResponse
			err := tr.AppendEntries(raft.ServerID(n.ID()), raft.ServerAddress(n.RaftAddr()), forgedAppend(t, n, "k"), &resp)
			if err == nil {
				t.Errorf("the forged AppendEntries was answered: success=%v term=%d", resp.Success, resp.Term)
			}
			// A legitimate write commits after the attack: the node still
			// leads, and everything the attack could have applied is applied.
			mustStatus(t, c.acquire(n.HTTPAddr(), "after", "bob", time.Hour, 0), 200, "a write after the attack")
			after := viewOf(t, n, "k")
			if after != before {
				t.Fatalf("the attack changed the node: before %+v, after %+v (term now %s)", before, after, strconv.FormatUint(n.raft.CurrentTerm(), 10))
			}
			if !n.IsLeader() {
				t.Fatal("the node lost its leadership")
			}
		})
	}
}

// Three nodes bootstrapped together, n3 with another raft secret: n1 and
// n2 form the cluster and replicate to each other; n3 is refused by both
// (and refuses them), never learns the table, never leads, and its
// elections do not disturb the others' term. No log line holds either
// secret. A cluster whose nodes share the secret (the other tests and
// TestRaftAuth_ClusterWithSecretServes) forms as before.
func TestRaftAuth_WrongSecretCannotJoinTheCluster(t *testing.T) {
	const right, wrong = "right-raft-secret-0123456789", "wrong-raft-secret-0123456789"
	logs := &syncbuf.Buffer{}
	_, nodes := startBootstrapped(t, func(cfg *Config) {
		cfg.RaftSecret = right
		if cfg.ID == "n3" {
			cfg.RaftSecret = wrong
		} else {
			// n1 and n2 tolerate a long silence, so that a loaded machine
			// does not make the leader step down, or a follower hold an
			// election, in the window that checks their term; n3 keeps the
			// short timeouts and runs many elections in it.
			cfg.ElectionTimeout, cfg.HeartbeatTimeout, cfg.LeaderLeaseTimeout = 5*testElection, 5*testHeartbeat, 5*testLease
		}
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: logbridge.LevelTrace})).With("node", cfg.ID)
	})
	n3 := nodes[2]
	leader := waitLeader(t, nodes[:2])
	if leader == n3 {
		t.Fatal("n3 leads")
	}
	c := newClient(t)
	mustStatus(t, c.acquire(leader.HTTPAddr(), "k", "alice", time.Minute, 0), 200, "acquire on the leader")
	other := followers(nodes[:2], leader)[0]
	waitFor(t, 10*time.Second, "k replicated to the other member", func() bool { return viewOf(t, other, "k").owner == "alice" })
	term := leader.raft.CurrentTerm()

	// n3 runs for several election timeouts (it starts elections of its
	// own); the check that nothing reaches it is bounded by that time.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(5 * testElection); time.Now().Before(end); <-tick.C {
		if v := viewOf(t, n3, "k"); v.owner != "" || v.leader != "" || n3.IsLeader() {
			t.Fatalf("n3 took part: %+v, leading=%v", v, n3.IsLeader())
		}
	}
	if !leader.IsLeader() || leader.raft.CurrentTerm() != term {
		t.Fatalf("the cluster was disturbed: leader=%v term %d -> %d", leader.IsLeader(), term, leader.raft.CurrentTerm())
	}
	all := logs.String()
	if !strings.Contains(all, "did not prove it knows the raft secret") && !strings.Contains(all, "refused this node's proof") {
		t.Fatalf("no node logged the refusal:\n%s", all)
	}
	if strings.Contains(all, right) || strings.Contains(all, wrong) {
		t.Fatal("a raft secret appears in the logs")
	}
}

// A cluster whose nodes share a raft secret (and no token) forms by join
// and serves through every node.
func TestRaftAuth_ClusterWithSecretServes(t *testing.T) {
	nodes := startCluster(t, 3, func(c *Config) { c.RaftSecret = "shared-raft-secret-0123456789" })
	leader := waitLeader(t, nodes)
	c := newClient(t)
	for _, n := range followers(nodes, leader) {
		mustStatus(t, c.acquire(n.HTTPAddr(), "via-"+n.ID(), "o", time.Minute, 0), 200, "acquire through "+n.ID())
	}
	for _, n := range nodes {
		waitFor(t, 10*time.Second, "replication to "+n.ID(), func() bool {
			for _, f := range followers(nodes, leader) {
				if viewOf(t, n, "via-"+f.ID()).owner != "o" {
					return false
				}
			}
			return true
		})
	}
}

// Raft needs TLS, a raft secret or an explicit opt-out, on loopback too
// (any process of the host could write the table); the API token is no
// raft key, and a node that relied on it is told how to keep its key.
func TestRaftAuth_RaftNeedsItsOwnCredential(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mod     func(*Config)
		mention []string // nil: accepted
	}{
		{"loopback, nothing", func(c *Config) {}, []string{"nothing to authenticate", "--raft-secret-file", "LOCKCLUSTER_RAFT_SECRET", "--tls-cert", "--raft-insecure"}},
		{"LAN, nothing", func(c *Config) { c.RaftAddr = "10.0.0.1:7101" }, []string{"nothing to authenticate"}},
		{"LAN, token only", func(c *Config) { c.RaftAddr = "10.0.0.1:7101"; c.Token = "a-token-of-sixteen-bytes" },
			[]string{"the API token no longer authenticates raft", "current token's value as its raft secret"}},
		{"short token", func(c *Config) { c.Token = "tok"; c.RaftSecret = "sixteen-bytes-at-least" }, []string{"Token is 3 bytes"}},
		{"short raft secret", func(c *Config) { c.RaftSecret = "short" }, []string{"RaftSecret is 5 bytes"}},
		{"LAN, raft secret", func(c *Config) { c.RaftAddr = "10.0.0.1:7101"; c.RaftSecret = "sixteen-bytes-at-least" }, nil},
		{"LAN, TLS", func(c *Config) {
			c.RaftAddr = "10.0.0.1:7101"
			c.TLS = TLSConfig{CertFile: "n.pem", KeyFile: "n-key.pem", CAFile: "ca.pem"}
		}, nil},
		{"LAN, insecure on purpose", func(c *Config) { c.RaftAddr = "10.0.0.1:7101"; c.RaftInsecure = true }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{ID: "n1", DataDir: "d", RaftAddr: "127.0.0.1:7101", HTTPAddr: "127.0.0.1:7001"}
			tc.mod(&cfg)
			err := cfg.withDefaults().Validate()
			if tc.mention == nil && err != nil {
				t.Fatalf("refused: %v", err)
			}
			for _, want := range tc.mention {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("error %v does not mention %q", err, want)
				}
			}
		})
	}
}
