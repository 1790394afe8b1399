package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
)

// BenchmarkCluster_OtherClientBesideWaitingSets measures what acquire-alls
// that wait cost another client: one worker's acquire+release cycles on a
// key of its own, alone and then beside 256 acquire-alls of 8 free keys
// and a busy one, each waiting with a 100 ms TTL while it keeps its 8 keys
// alive. It reports the worker's p50 and p99 in both phases, and the
// entries per second the waiting sets proposed to keep their keys
// (extends and acquire-alls applied during the second phase).
//
//	go test -run '^$' -bench OtherClientBesideWaitingSets -benchtime 1x ./cluster/
func BenchmarkCluster_OtherClientBesideWaitingSets(b *testing.B) {
	const sets, keys, cycles = 256, 8, 3000
	nodes := startCluster(b, 1, nil)
	n, addr := nodes[0], nodes[0].HTTPAddr()
	c := newBenchClient(b)
	alone := runPhase(b, c, addr, 1, cycles, false, "alone")

	for i := range sets {
		if st, err := c.post(addr, "/v1/acquire", map[string]any{"key": fmt.Sprintf("busy/%d", i), "owner": "holder", "ttl_ms": 600_000}); st != http.StatusOK {
			b.Fatalf("busy/%d: %d %v", i, st, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range sets {
		set := []string{fmt.Sprintf("busy/%d", i)}
		for k := range keys {
			set = append(set, fmt.Sprintf("set/%d/%d", i, k))
		}
		body, _ := json.Marshal(map[string]any{"keys": set, "owner": fmt.Sprintf("set-%d", i), "ttl_ms": 100, "wait_ms": 120_000})
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+addr+"/v1/acquire", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			if resp, err := c.http.Do(req); err == nil {
				resp.Body.Close()
			}
		})
	}
	defer func() { cancel(); wg.Wait() }()
	waitFor(b, 60*time.Second, "every set to queue", func() bool { return n.fsm.WaiterCount() >= sets })

	var kept atomic.Int64
	hook := func(a fsm.Applied) {
		if a.Entry.Op == engine.OpExtend || (a.Entry.Op == engine.OpAcquireKeys && !a.Entry.Wait) {
			kept.Add(1)
		}
	}
	n.applyHook.Store(&hook)
	defer n.applyHook.Store(nil)
	start := time.Now()
	beside := runPhase(b, c, addr, 1, cycles, false, "beside")
	rate := float64(kept.Load()) / time.Since(start).Seconds()

	b.ReportMetric(float64(alone.p50.Microseconds())/1000, "alone_p50_ms")
	b.ReportMetric(float64(alone.p99.Microseconds())/1000, "alone_p99_ms")
	b.ReportMetric(float64(beside.p50.Microseconds())/1000, "beside_p50_ms")
	b.ReportMetric(float64(beside.p99.Microseconds())/1000, "beside_p99_ms")
	b.ReportMetric(rate, "keepalive_entries/s")
}
