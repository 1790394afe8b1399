package cluster

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
	"github.com/zerotal/lock/internal/loopback"
)

// An acquire-all by a key's holder whose grant has run out, with another
// owner queued for the key, committed before the leader's expiry of that
// grant: whatever table it leaves, a node snapshots it, restarts on its
// own data dir from that snapshot and holds the same table as the others.
// (It once queued the expired holder behind the waiter while still naming
// it the holder: the snapshot decoder refused that table, and the node
// its own data dir.)
func TestCluster_AcquireAllByExpiredHolderLeavesARestorableTable(t *testing.T) {
	var peers []Peer
	for _, id := range []string{"n1", "n2", "n3"} {
		peers = append(peers, Peer{ID: id, RaftAddr: loopback.MustFreeAddr(t), HTTPAddr: loopback.MustFreeAddr(t)})
	}
	cfgs := map[string]Config{}
	var nodes []*Node
	for _, p := range peers {
		cfg := testConfig(t, p.ID)
		cfg.RaftAddr, cfg.HTTPAddr, cfg.Bootstrap, cfg.BootstrapSelf = p.RaftAddr, p.HTTPAddr, peers, false
		cfgs[p.ID] = cfg
	}
	starts := make(chan *Node, len(peers))
	for _, p := range peers {
		go func() { starts <- startNode(t, cfgs[p.ID]) }()
	}
	for range peers {
		nodes = append(nodes, <-starts)
	}
	if t.Failed() {
		t.FailNow()
	}
	var leader *Node
	var l *leadership
	waitFor(t, 15*time.Second, "a leader whose clock runs", func() bool {
		leader = waitLeader(t, nodes)
		l = leader.lead.Load()
		return l != nil && l.clock.UntilRunning() == 0
	})
	// The leader's expiry of k is held back, as when it has not committed
	// yet; every other entry goes through.
	heldBack := errors.New("test: expiry of k held back")
	hook := func(e fsm.Entry) error {
		if e.Op == engine.OpExpire && e.Key == "k" {
			return heldBack
		}
		return nil
	}
	for _, n := range nodes {
		n.proposeHook.Store(&hook)
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			n.proposeHook.Store(nil)
		}
	})

	c := newClient(t)
	addr := leader.HTTPAddr()
	mustStatus(t, c.acquire(addr, "k", "a", 300*time.Millisecond, 0), http.StatusOK, "a acquires k")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waits := make(chan reply, 2)
	go func() { waits <- c.acquire(addr, "k", "b", time.Minute, 20*time.Second) }()
	waitFor(t, 10*time.Second, "b to queue for k", func() bool { return isWaiter(leader, "k", "b") })
	info, ok, err := leader.fsm.Get(ctx, "k")
	if err != nil || !ok || info.Owner != "a" {
		t.Fatalf("k = %+v %v %v, want held by a", info, ok, err)
	}
	waitFor(t, 10*time.Second, "a's grant of k to run out on the leader's clock", func() bool { return l.clock.Now() > info.Deadline })

	all := map[string]any{"keys": []string{"j", "k"}, "owner": "a", "ttl_ms": 60000, "wait_ms": 20000}
	go func() { waits <- c.do(addr, "POST", "/v1/acquire", all) }()
	waitFor(t, 10*time.Second, "a's acquire-all to be applied on every node", func() bool {
		for _, n := range nodes {
			if !isWaiter(n, "k", "a") {
				return false
			}
		}
		return true
	})

	var follower *Node
	for _, n := range nodes {
		if n != leader {
			follower = n
			break
		}
	}
	if err := follower.raft.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot on %s: %v", follower.ID(), err)
	}
	shutdown(t, follower)
	restarted, err := restart(t, cfgs[follower.ID()])
	if err != nil {
		t.Fatalf("%s does not start on its own data dir after the acquire-all: %v", follower.ID(), err)
	}
	var want, got []engine.Info
	waitFor(t, 10*time.Second, "the restarted node to hold the leader's table", func() bool {
		want, _ = leader.fsm.List(ctx, "", 0)
		got, _ = restarted.fsm.List(ctx, "", 0)
		return len(want) > 0 && reflect.DeepEqual(got, want)
	})
	for _, in := range want {
		if in.Key == "k" && in.Owner == "a" {
			t.Fatalf("k = %+v: a both holds k and waits for it", in)
		}
	}

	// The waits end: the test's expiry hold is lifted and both requests
	// are answered before the nodes stop.
	for _, n := range nodes {
		n.proposeHook.Store(nil)
	}
	mustStatus(t, c.release(addr, "k", "b"), http.StatusOK, "b releases k")
	for range 2 {
		select {
		case r := <-waits:
			if r.Status != http.StatusOK {
				t.Errorf("a wait ended %d %s, want granted", r.Status, r.Raw)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a waiting request was never answered")
		}
	}
}
