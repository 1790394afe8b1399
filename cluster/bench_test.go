package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/zerotal/lock/cluster/raftstore"
	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
)

// benchClient is a lean HTTP caller for benchmarks (no testing.T).
type benchClient struct {
	http    *http.Client
	retries atomic.Int64
}

func newBenchClient(b *testing.B) *benchClient {
	tr := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}
	b.Cleanup(tr.CloseIdleConnections)
	return &benchClient{http: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// post sends body, retrying a 503 (an election under load) as a client
// would, a bounded number of times.
func (c *benchClient) post(addr, path string, body any) (int, error) {
	j, _ := json.Marshal(body)
	for attempt := 0; ; attempt++ {
		resp, err := c.http.Post("http://"+addr+path, "application/json", bytes.NewReader(j))
		if err != nil {
			return 0, err
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || attempt == 50 {
			if resp.StatusCode != http.StatusOK {
				return resp.StatusCode, fmt.Errorf("%s", msg)
			}
			return resp.StatusCode, nil
		}
		c.retries.Add(1)
		time.Sleep(20 * time.Millisecond) // back off before retrying, like a client
	}
}

// cycle acquires (waiting up to wait) and releases key, and returns the
// acquire latency.
func (c *benchClient) cycle(addr, key, owner string, wait time.Duration) (time.Duration, error) {
	start := time.Now()
	st, err := c.post(addr, "/v1/acquire", map[string]any{"key": key, "owner": owner, "ttl_ms": 30000, "wait_ms": wait.Milliseconds()})
	lat := time.Since(start)
	if err != nil || st != http.StatusOK {
		return 0, fmt.Errorf("acquire %s: status %d: %v", key, st, err)
	}
	if st, err := c.post(addr, "/v1/release", map[string]any{"key": key, "owner": owner}); err != nil || st != http.StatusOK {
		return 0, fmt.Errorf("release %s: status %d: %v", key, st, err)
	}
	return lat, nil
}

type phase struct {
	opsPerSec float64
	p50, p99  time.Duration
}

// runPhase runs total acquire+release cycles over workers goroutines.
// sameKey makes every worker contend for one key (waiting its turn).
func runPhase(b *testing.B, c *benchClient, addr string, workers, total int, sameKey bool, tag string) phase {
	b.Helper()
	var next atomic.Int64
	lats := make([][]time.Duration, workers)
	var wg sync.WaitGroup
	var failed atomic.Value
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(total) {
					return
				}
				key, wait := fmt.Sprintf("%s/%d", tag, w), time.Duration(0)
				if sameKey {
					key, wait = tag, 30*time.Second
				}
				lat, err := c.cycle(addr, key, fmt.Sprintf("%s-w%d-%d", tag, w, i), wait)
				if err != nil {
					failed.Store(err)
					return
				}
				lats[w] = append(lats[w], lat)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	return phase{
		opsPerSec: float64(total) / elapsed.Seconds(),
		p50:       all[len(all)/2],
		p99:       all[len(all)*99/100],
	}
}

// BenchmarkCluster_GroupCommit measures acquire+release cycles over HTTP on
// a three-node cluster (real TCP transport, raft-boltdb with fsync), all in
// this process. The baseline is one serial worker in the same run: with
// group commit (BatchApplyCh, batched FSM apply) 32 concurrent workers share
// fsyncs, so spread_vs_serial should be well above 1. hot8 is eight workers
// queueing on one key (FIFO hand-off, no polling).
func BenchmarkCluster_GroupCommit(b *testing.B) {
	nodes := startCluster(b, 3, func(c *Config) {
		c.ElectionTimeout, c.HeartbeatTimeout, c.LeaderLeaseTimeout = DefaultElectionTimeout, DefaultHeartbeatTimeout, DefaultLeaderLeaseTimeout
		c.TickInterval = time.Second
	})
	leader := waitLeader(b, nodes)
	follower := followers(nodes, leader)[0]
	c := newBenchClient(b)
	n := max(b.N, 64)
	b.ResetTimer()
	serial := runPhase(b, c, leader.HTTPAddr(), 1, n/4+1, false, "serial")
	spread := runPhase(b, c, leader.HTTPAddr(), 32, n, false, "spread")
	viaFollower := runPhase(b, c, follower.HTTPAddr(), 32, n, false, "fwd")
	hot := runPhase(b, c, leader.HTTPAddr(), 8, n/4+1, true, "hot")
	b.StopTimer()
	b.ReportMetric(serial.opsPerSec, "serial_cycles/s")
	b.ReportMetric(spread.opsPerSec, "spread32_cycles/s")
	b.ReportMetric(viaFollower.opsPerSec, "spread32_via_follower_cycles/s")
	b.ReportMetric(hot.opsPerSec, "hot8_cycles/s")
	b.ReportMetric(spread.opsPerSec/serial.opsPerSec, "spread_vs_serial")
	b.ReportMetric(float64(c.retries.Load()), "retried_503s")
	b.ReportMetric(float64(spread.p50.Microseconds()), "spread_acq_p50_us")
	b.ReportMetric(float64(spread.p99.Microseconds()), "spread_acq_p99_us")
	b.ReportMetric(float64(serial.p50.Microseconds()), "serial_acq_p50_us")
	b.ReportMetric(float64(hot.p50.Microseconds()), "hot_acq_p50_us")
	b.ReportMetric(float64(hot.p99.Microseconds()), "hot_acq_p99_us")
}

// BenchmarkCluster_CommitLatency measures one replicated commit at a time
// (a time-only entry through raft on three nodes, real TCP, fsync on) and,
// as the baseline in the same run, one bolt transaction of a single entry
// on a store configured like a node's. A commit needs the leader's write,
// then a follower's, so commit_vs_store near 2 means little overhead on
// top of the disk.
func BenchmarkCluster_CommitLatency(b *testing.B) {
	n := max(b.N, 64)
	store, err := raftboltdb.New(raftstore.BoltOptions(filepath.Join(b.TempDir(), "raft.db")))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	data := make([]byte, 64)
	storeLats := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		start := time.Now()
		if err := store.StoreLogs([]*raft.Log{{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: data}}); err != nil {
			b.Fatal(err)
		}
		storeLats = append(storeLats, time.Since(start))
	}

	nodes := startCluster(b, 3, func(c *Config) {
		c.ElectionTimeout, c.HeartbeatTimeout, c.LeaderLeaseTimeout = DefaultElectionTimeout, DefaultHeartbeatTimeout, DefaultLeaderLeaseTimeout
		c.TickInterval = time.Second
	})
	leader := waitLeader(b, nodes)
	commitLats := make([]time.Duration, 0, n)
	b.ResetTimer()
	for i := 0; i < n; i++ {
		start := time.Now()
		if _, err := leader.apply(fsm.Entry{Op: engine.OpTick, Now: 1}); err != nil {
			b.Fatal(err)
		}
		commitLats = append(commitLats, time.Since(start))
	}
	b.StopTimer()
	store50, commit50 := median(storeLats), median(commitLats)
	b.ReportMetric(float64(store50.Microseconds()), "store_p50_us")
	b.ReportMetric(float64(commit50.Microseconds()), "commit_p50_us")
	b.ReportMetric(float64(commit50)/float64(store50), "commit_vs_store")
}

func median(d []time.Duration) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}
