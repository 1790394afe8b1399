package cluster

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
	"github.com/zerotal/lock/internal/loopback"
)

// inmemCluster starts three nodes on raft's in-memory transport (so tests
// can cut links) with real HTTP servers, bootstrapped together.
func inmemCluster(t *testing.T) ([]*Node, []*raft.InmemTransport) {
	t.Helper()
	var peers []Peer
	var trans []*raft.InmemTransport
	for i := 1; i <= 3; i++ {
		// Inmem addresses are free-form; host:port keeps Validate happy.
		addr, tr := raft.NewInmemTransport(raft.ServerAddress(fmt.Sprintf("127.0.0.1:%d", 17000+i)))
		trans = append(trans, tr)
		peers = append(peers, Peer{ID: fmt.Sprintf("n%d", i), RaftAddr: string(addr), HTTPAddr: loopback.MustFreeAddr(t)})
	}
	connectAll(trans)
	var nodes []*Node
	for i, p := range peers {
		cfg := testConfig(t, p.ID)
		cfg.RaftAddr, cfg.HTTPAddr, cfg.Bootstrap, cfg.Transport, cfg.BootstrapSelf = p.RaftAddr, p.HTTPAddr, peers, trans[i], false
		nodes = append(nodes, startNode(t, cfg))
	}
	// Runs before the nodes shut down: a closed inmem peer would otherwise
	// swallow RPCs (a leadership transfer's TimeoutNow) until they time out.
	t.Cleanup(func() {
		for _, tr := range trans {
			tr.DisconnectAll()
		}
	})
	return nodes, trans
}

func connectAll(trans []*raft.InmemTransport) {
	for _, a := range trans {
		for _, b := range trans {
			if a != b {
				a.Connect(b.LocalAddr(), b)
			}
		}
	}
}

func isolate(tr *raft.InmemTransport, all []*raft.InmemTransport) {
	tr.DisconnectAll()
	for _, o := range all {
		if o != tr {
			o.Disconnect(tr.LocalAddr())
		}
	}
}

// The etcd #15247 scenario end to end: the leader is cut off just after a
// grant with a short TTL. Its clock says the lock is due, and it keeps
// proposing (expiries, ticks) into its own log. The majority elects a new
// leader, whose grace gives the holder time to refresh. When the old leader
// comes back, none of its stale proposals may take the lock away.
func TestCluster_PartitionedLeaderCannotExpireRefreshedLock(t *testing.T) {
	nodes, trans := inmemCluster(t)
	c := newClient(t)
	// A settled leader whose clock runs (grace over) grants a short lock.
	// Elections right after a joint bootstrap may still move leadership:
	// start over when the grant lands elsewhere.
	var (
		old   *Node
		l     *leadership
		fence int64
	)
	for attempt := 0; ; attempt++ {
		waitFor(t, 15*time.Second, "a leader whose clock runs", func() bool {
			old = waitLeader(t, nodes)
			l = old.lead.Load()
			return l != nil && l.clock.UntilRunning() == 0
		})
		r := c.acquire(old.HTTPAddr(), "k", "a", 50*time.Millisecond, 0)
		if r.Status == http.StatusOK && old.lead.Load() == l {
			fence = r.num("fence")
			break
		}
		if attempt == 5 {
			t.Fatalf("no stable leader to grant the lock: %d %s", r.Status, r.Raw)
		}
		c.do(old.HTTPAddr(), "POST", "/v1/force-release", map[string]any{"key": "k"})
	}
	var oldTrans *raft.InmemTransport
	var rest []*Node
	for i, n := range nodes {
		if n == old {
			oldTrans = trans[i]
		} else {
			rest = append(rest, n)
		}
	}
	idx0 := old.raft.LastIndex()

	isolate(oldTrans, trans)
	// Besides whatever its expiry loop proposes, the cut-off leader
	// proposes an expiry stamped well past the deadline.
	stale := old.propose(fsm.Entry{Op: engine.OpExpire, Key: "k", Owner: "a", ExpectFence: uint64(fence), Now: l.clock.Now() + int64(time.Second)})
	newLeader := waitLeader(t, rest)
	// The holder refreshes through the new leader (as a client retrying on
	// another node would); the grace keeps its lock alive until then.
	r := c.do(newLeader.HTTPAddr(), "POST", "/v1/extend", map[string]any{"key": "k", "owner": "a", "ttl_ms": 60000})
	if r.Status != http.StatusOK || !r.flag("extended") {
		t.Fatalf("refresh on the new leader = %d %s", r.Status, r.Raw)
	}
	if err := stale.Error(); err == nil {
		t.Fatal("an expiry proposed by a cut-off leader committed")
	}
	waitFor(t, 5*time.Second, "the old leader to step down", func() bool { return !old.IsLeader() && old.raft.State() != raft.Leader })
	t.Logf("the cut-off leader's log grew from %d to %d", idx0, old.raft.LastIndex())

	connectAll(trans)
	waitFor(t, 10*time.Second, "the old leader to catch up", func() bool {
		return old.fsm.AppliedIndex() >= newLeader.fsm.AppliedIndex() && old.raft.State() == raft.Follower
	})
	for _, n := range nodes {
		info, ok, err := n.fsm.Get(t.Context(), "k")
		if err != nil || !ok || info.Owner != "a" || int64(info.Fence) != fence {
			t.Fatalf("%s: lock = %+v %v %v, want owner a fence %d", n.ID(), info, ok, err, fence)
		}
	}
	leader := waitLeader(t, nodes)
	r = c.get(leader.HTTPAddr(), "k")
	if r.str("owner") != "a" || r.num("remaining_ms") < 50000 {
		t.Fatalf("lock after the partition healed = %s", r.Raw)
	}
}
