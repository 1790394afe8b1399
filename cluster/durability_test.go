package cluster

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/zerotal/lock/internal/loopback"
)

// Every grant acknowledged under concurrent load, where many requests
// share a round and its fsyncs, survives a full stop and restart of all
// three nodes with its owner and fence. A request still waiting when the
// cluster stops is answered 503 (the client retries). On each log store.
func TestCluster_AcknowledgedGrantsSurviveFullRestart(t *testing.T) {
	for _, raftLog := range raftLogs {
		t.Run(raftLog, func(t *testing.T) { testAcknowledgedGrantsSurviveFullRestart(t, raftLog) })
	}
}

// raftLogs are the log stores the durability and restart tests run on.
var raftLogs = []string{RaftLogBolt, RaftLogWAL}

func testAcknowledgedGrantsSurviveFullRestart(t *testing.T, raftLog string) {
	var peers []Peer
	for _, id := range []string{"n1", "n2", "n3"} {
		peers = append(peers, Peer{ID: id, RaftAddr: loopback.MustFreeAddr(t), HTTPAddr: loopback.MustFreeAddr(t)})
	}
	var cfgs []Config
	for _, p := range peers {
		cfg := testConfig(t, p.ID)
		cfg.RaftAddr, cfg.HTTPAddr, cfg.Bootstrap, cfg.BootstrapSelf = p.RaftAddr, p.HTTPAddr, peers, false
		cfg.RaftLog = raftLog
		cfgs = append(cfgs, cfg)
	}
	start := func() []*Node {
		var wg sync.WaitGroup
		nodes := make([]*Node, len(cfgs))
		for i, cfg := range cfgs {
			wg.Add(1)
			go func() { defer wg.Done(); nodes[i] = startNode(t, cfg) }()
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow() // a node did not start (startNode failed its goroutine): no nil nodes to wait on
		}
		return nodes
	}
	nodes := start()
	leader := waitLeader(t, nodes)
	c := newClient(t)

	const workers, each = 16, 10
	type grant struct {
		owner string
		fence int64
	}
	var mu sync.Mutex
	acked := map[string]grant{}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				key, owner := fmt.Sprintf("k%d-%d", w, i), fmt.Sprintf("o%d", w)
				r := c.acquire(leader.HTTPAddr(), key, owner, time.Hour, 0)
				if r.Status != http.StatusOK {
					t.Errorf("acquire %s: %s", key, r.Raw)
					return
				}
				mu.Lock()
				acked[key] = grant{owner, r.num("fence")}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// A lazily proposed queue entry is committed before the stop.
	waiting := make(chan reply, 1)
	go func() { waiting <- c.acquire(leader.HTTPAddr(), "k0-0", "late", time.Hour, 10*time.Second) }()
	waitFor(t, 5*time.Second, "the waiter to queue", func() bool { return isWaiter(leader, "k0-0", "late") })
	for _, n := range nodes {
		shutdown(t, n)
	}
	if r := <-waiting; r.Status != http.StatusServiceUnavailable {
		t.Fatalf("waiting acquire during shutdown = %d %s, want 503", r.Status, r.Raw)
	}

	nodes = start()
	leader = waitLeader(t, nodes)
	if len(acked) != workers*each {
		t.Fatalf("%d grants acknowledged, want %d", len(acked), workers*each)
	}
	for key, g := range acked {
		r := c.get(leader.HTTPAddr(), key)
		if r.str("owner") != g.owner || r.num("fence") != g.fence {
			t.Fatalf("after restart %s = %s, want owner %s fence %d", key, r.Raw, g.owner, g.fence)
		}
	}
}
