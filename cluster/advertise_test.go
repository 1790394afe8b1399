package cluster

import (
	"net/http"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zerotal/lock/internal/loopback"
	"github.com/zerotal/lock/internal/testkit/tcpproxy"
)

// startForwarder forwards a new loopback port to target, as a NAT or a
// proxy between nodes would, until the test ends; it stops after the
// nodes, which are started later. A cut closes every connection it
// carries and refuses new ones until healed.
func startForwarder(t testing.TB, target string) *tcpproxy.Proxy {
	t.Helper()
	p, err := tcpproxy.Start(target, tcpproxy.Refuse)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// Each node listens on one loopback port for raft and one for HTTP and
// advertises two others, where a forwarder passes the traffic on to it.
// The cluster forms, elects and replicates through the advertised
// addresses, forwards follower requests to the leader's advertised HTTP
// address, and cutting the forwarders partitions it: nothing goes to the
// bound addresses directly.
func TestCluster_TrafficGoesToAdvertisedAddresses(t *testing.T) {
	type fwd struct{ raft, http *tcpproxy.Proxy }
	fwds := map[string]fwd{}
	nodes := startCluster(t, 3, func(c *Config) {
		c.RaftAddr, c.HTTPAddr = loopback.MustFreeAddr(t), loopback.MustFreeAddr(t)
		f := fwd{raft: startForwarder(t, c.RaftAddr), http: startForwarder(t, c.HTTPAddr)}
		c.RaftAdvertise, c.HTTPAdvertise = f.raft.Addr(), f.http.Addr()
		fwds[c.ID] = f
	})
	leader := waitLeader(t, nodes)
	c := newClient(t)

	// The raft configuration and the member map hold the advertised
	// addresses only.
	cfg := leader.raft.GetConfiguration()
	if err := cfg.Error(); err != nil {
		t.Fatal(err)
	}
	for _, s := range cfg.Configuration().Servers {
		if want := fwds[string(s.ID)].raft.Addr(); string(s.Address) != want {
			t.Errorf("raft configuration lists %s at %s, want its advertised %s", s.ID, s.Address, want)
		}
	}
	for _, n := range nodes {
		if n.RaftAddr() != fwds[n.ID()].raft.Addr() {
			t.Errorf("%s: RaftAddr() = %s, want the advertised %s", n.ID(), n.RaftAddr(), fwds[n.ID()].raft.Addr())
		}
		if got, ok := leader.fsm.Member(n.ID()); !ok || got != fwds[n.ID()].http.Addr() {
			t.Errorf("member map lists %s at %q, want its advertised HTTP %s", n.ID(), got, fwds[n.ID()].http.Addr())
		}
	}

	// Replication: an acquire on the leader reaches every FSM.
	mustStatus(t, c.acquire(leader.HTTPAddr(), "k", "o", time.Minute, 0), http.StatusOK, "acquire on the leader")
	waitFor(t, 10*time.Second, "the grant on every node", func() bool {
		for _, n := range nodes {
			if n.fsm.Keys() != 1 {
				return false
			}
		}
		return true
	})
	// The leader dials its followers (nobody dials a leader outside an
	// election).
	for _, n := range followers(nodes, leader) {
		if fwds[n.ID()].raft.Carried() == 0 {
			t.Errorf("no raft connection reached %s through its advertised address", n.ID())
		}
	}

	// Forwarding: a follower reaches the leader at its advertised HTTP
	// address, and only there.
	fol := followers(nodes, leader)[0]
	lf := fwds[leader.ID()].http
	before := lf.Carried()
	mustStatus(t, c.acquire(fol.HTTPAddr(), "via-follower", "o", time.Minute, 0), http.StatusOK, "acquire through a follower")
	if lf.Carried() == before {
		t.Fatal("the forwarded acquire did not go through the leader's advertised HTTP address")
	}
	lf.Cut()
	mustStatus(t, c.acquire(fol.HTTPAddr(), "cut", "o", time.Minute, 0), http.StatusServiceUnavailable,
		"acquire through a follower with the leader's advertised HTTP address cut")
	mustStatus(t, c.acquire(leader.HTTPAddr(), "direct", "o", time.Minute, 0), http.StatusOK, "acquire on the leader directly")
	lf.Heal()
	// The cut closed the follower's kept-alive connections; a POST is not
	// retried on one found dead, so drop them before asking again.
	fol.proxy.CloseIdleConnections()
	mustStatus(t, c.acquire(fol.HTTPAddr(), "mended", "o", time.Minute, 0), http.StatusOK, "acquire through a follower, mended")

	// Partition: with every advertised raft address cut, the leader loses
	// its quorum and steps down, and nobody can be elected.
	for _, f := range fwds {
		f.raft.Cut()
	}
	waitFor(t, 10*time.Second, "every node to lose its leader", func() bool {
		for _, n := range nodes {
			if _, id := n.raft.LeaderWithID(); n.raft.State() == raft.Leader || id != "" {
				return false
			}
		}
		return true
	})
	r := c.acquire(fol.HTTPAddr(), "partitioned", "o", time.Minute, 0)
	mustStatus(t, r, http.StatusServiceUnavailable, "acquire during the partition")

	for _, f := range fwds {
		f.raft.Heal()
	}
	leader = waitLeader(t, nodes)
	mustStatus(t, c.acquire(leader.HTTPAddr(), "healed", "o", time.Minute, 0), http.StatusOK, "acquire after the partition")
}
