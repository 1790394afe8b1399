package cluster

import (
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zerotal/lock/internal/loopback"
)

// forwarder accepts TCP connections on a loopback port and copies them
// to and from target, as a NAT or a proxy between nodes would. Cut
// closes every connection it carries and refuses new ones until Mend.
type forwarder struct {
	ln       net.Listener
	target   string
	accepted atomic.Int64 // connections carried to the target

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// startForwarder forwards a new loopback port to target until the test
// ends; it stops after the nodes, which are started later.
func startForwarder(t testing.TB, target string) *forwarder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &forwarder{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.acceptLoop()
	t.Cleanup(func() {
		_ = ln.Close()
		f.setCut(true)
		f.wg.Wait()
	})
	return f
}

func (f *forwarder) addr() string { return f.ln.Addr().String() }

func (f *forwarder) acceptLoop() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		if !f.track(c) {
			continue
		}
		f.wg.Add(1)
		go f.pipe(c)
	}
}

// track remembers c so that a cut can close it; while cut, it closes c
// and reports false.
func (f *forwarder) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cut {
		_ = c.Close()
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *forwarder) untrack(c net.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
	_ = c.Close()
}

func (f *forwarder) pipe(in net.Conn) {
	defer f.wg.Done()
	defer f.untrack(in)
	out, err := net.DialTimeout("tcp", f.target, 5*time.Second)
	if err != nil {
		return
	}
	if !f.track(out) {
		return
	}
	defer f.untrack(out)
	f.accepted.Add(1)
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go cp(out, in)
	go cp(in, out)
	<-done
	// One direction ended: close both, which ends the other copy.
	_ = in.Close()
	_ = out.Close()
	<-done
}

// setCut closes every carried connection and refuses new ones (true), or
// carries new ones again (false).
func (f *forwarder) setCut(cut bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cut = cut
	if cut {
		for c := range f.conns {
			_ = c.Close()
		}
	}
}

// Each node listens on one loopback port for raft and one for HTTP and
// advertises two others, where a forwarder passes the traffic on to it.
// The cluster forms, elects and replicates through the advertised
// addresses, forwards follower requests to the leader's advertised HTTP
// address, and cutting the forwarders partitions it: nothing goes to the
// bound addresses directly.
func TestCluster_TrafficGoesToAdvertisedAddresses(t *testing.T) {
	type fwd struct{ raft, http *forwarder }
	fwds := map[string]fwd{}
	nodes := startCluster(t, 3, func(c *Config) {
		c.RaftAddr, c.HTTPAddr = loopback.MustFreeAddr(t), loopback.MustFreeAddr(t)
		f := fwd{raft: startForwarder(t, c.RaftAddr), http: startForwarder(t, c.HTTPAddr)}
		c.RaftAdvertise, c.HTTPAdvertise = f.raft.addr(), f.http.addr()
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
		if want := fwds[string(s.ID)].raft.addr(); string(s.Address) != want {
			t.Errorf("raft configuration lists %s at %s, want its advertised %s", s.ID, s.Address, want)
		}
	}
	for _, n := range nodes {
		if n.RaftAddr() != fwds[n.ID()].raft.addr() {
			t.Errorf("%s: RaftAddr() = %s, want the advertised %s", n.ID(), n.RaftAddr(), fwds[n.ID()].raft.addr())
		}
		if got, ok := leader.fsm.Member(n.ID()); !ok || got != fwds[n.ID()].http.addr() {
			t.Errorf("member map lists %s at %q, want its advertised HTTP %s", n.ID(), got, fwds[n.ID()].http.addr())
		}
	}

	// Replication: an acquire on the leader reaches every FSM.
	mustStatus(t, c.acquire(leader.HTTPAddr(), "k", "o", time.Minute, 0), http.StatusOK, "acquire on the leader")
	waitFor(t, 10*time.Second, "the grant on every node", func() bool {
		for _, n := range nodes {
			if n.fsm.Engine().Len() != 1 {
				return false
			}
		}
		return true
	})
	// The leader dials its followers (nobody dials a leader outside an
	// election).
	for _, n := range followers(nodes, leader) {
		if fwds[n.ID()].raft.accepted.Load() == 0 {
			t.Errorf("no raft connection reached %s through its advertised address", n.ID())
		}
	}

	// Forwarding: a follower reaches the leader at its advertised HTTP
	// address, and only there.
	fol := followers(nodes, leader)[0]
	lf := fwds[leader.ID()].http
	before := lf.accepted.Load()
	mustStatus(t, c.acquire(fol.HTTPAddr(), "via-follower", "o", time.Minute, 0), http.StatusOK, "acquire through a follower")
	if lf.accepted.Load() == before {
		t.Fatal("the forwarded acquire did not go through the leader's advertised HTTP address")
	}
	lf.setCut(true)
	mustStatus(t, c.acquire(fol.HTTPAddr(), "cut", "o", time.Minute, 0), http.StatusServiceUnavailable,
		"acquire through a follower with the leader's advertised HTTP address cut")
	mustStatus(t, c.acquire(leader.HTTPAddr(), "direct", "o", time.Minute, 0), http.StatusOK, "acquire on the leader directly")
	lf.setCut(false)
	// The cut closed the follower's kept-alive connections; a POST is not
	// retried on one found dead, so drop them before asking again.
	fol.proxy.CloseIdleConnections()
	mustStatus(t, c.acquire(fol.HTTPAddr(), "mended", "o", time.Minute, 0), http.StatusOK, "acquire through a follower, mended")

	// Partition: with every advertised raft address cut, the leader loses
	// its quorum and steps down, and nobody can be elected.
	for _, f := range fwds {
		f.raft.setCut(true)
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
		f.raft.setCut(false)
	}
	leader = waitLeader(t, nodes)
	mustStatus(t, c.acquire(leader.HTTPAddr(), "healed", "o", time.Minute, 0), http.StatusOK, "acquire after the partition")
}
