package stage

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/cluster"
	"github.com/zerotal/lock/cluster/clustertest"
	_ "github.com/zerotal/lock/drivers/cluster" // the "cluster" driver
)

// raft's timings, by the names it reports them under.
const (
	dispatchLog = "raft.leader.dispatchLog"                               // leader: stores the entry (its fsync)
	replication = "raft.replication.appendEntries.rpc"                    // leader: one AppendEntries round trip to a follower
	storeLogs   = "raft.rpc.appendEntries.storeLogs"                      // follower: stores the entries (its fsync)
	commitTime  = "raft.commitTime"                                       // leader: entry dispatched to commit seen
	fsmEnqueue  = "raft.fsm.enqueue"                                      // leader: committed entries handed to the FSM's queue
	applyBatch  = "raft.fsm.applyBatch"                                   // every node: the FSM applies a batch
	waitSeries  = "zerotal_lock_acquire_wait_seconds"                     // leader: request to grant
	stageTTL    = 10 * time.Minute                                        // no refresh and no expiry within a run
	httpBody    = `{"key":%q,"owner":%q,"ttl_ms":600000,"wait_ms":10000}` // as the client's Block sends it
	warmup      = 100
)

// BenchmarkAcquireStages runs b.N rounds of three serial operations, one
// after the other so that each sees the same machine: an acquire of a free
// key through the Go API (Manager.Make + Lock.Block, as a serial worker of
// lockcluster bench does), the same acquire as one plain HTTP/1.1 request
// to the leader, and a write + fsync of a file on the nodes' disk. Keys are
// never released, so every raft entry of the measured time is an acquire.
//
//	go test -run '^$' -bench AcquireStages -benchtime 2000x ./bench/stage/
func BenchmarkAcquireStages(b *testing.B) {
	s := &sink{samples: map[string][]float32{}}
	conf := metrics.DefaultConfig("")
	conf.EnableHostname, conf.EnableRuntimeMetrics = false, false
	conf.TimerGranularity = time.Microsecond
	if _, err := metrics.NewGlobal(conf, s); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _ = metrics.NewGlobal(conf, &metrics.BlackholeSink{}) })

	reg := prometheus.NewRegistry()
	c := clustertest.Start(b, 3, func(cfg *cluster.Config) {
		cfg.Registry = reg
		// A benchmark prints what it logs: only errors, not raft's
		// warnings of the nodes' start and stop.
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	})
	leader := c.Leader()
	if leader == nil {
		b.Fatal("no leader after start")
	}
	ctx := b.Context()
	m, err := lock.Open(ctx, lock.Config{Driver: "cluster", Cluster: lock.ClusterConfig{Addrs: c.Addrs()}})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	f, err := os.Create(filepath.Join(b.TempDir(), "floor"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()

	var api, plain, floor []time.Duration
	round := func(i int, record bool) {
		k := fmt.Sprintf("stage:%d:%d", b.N, i)
		start := time.Now()
		if err := m.Make(k+":api", stageTTL).Block(ctx, 10*time.Second); err != nil {
			b.Fatalf("Block: %v", err)
		}
		d := time.Since(start)
		start = time.Now()
		postAcquire(b, hc, leader.HTTPAddr(), k+":http")
		dp := time.Since(start)
		start = time.Now()
		if _, err := f.Write(make([]byte, 128)); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		df := time.Since(start)
		if record {
			api, plain, floor = append(api, d), append(plain, dp), append(floor, df)
		}
	}
	for i := range warmup {
		round(-1-i, false)
	}
	s.reset()
	w0 := acquireWait(b, reg, leader.ID())
	b.ResetTimer()
	for i := range b.N {
		round(i, true)
	}
	b.StopTimer()
	node := acquireWait(b, reg, leader.ID()).minus(w0)
	if c.Leader() != leader {
		b.Fatal("the leader changed during the run: its figures mix two leaders")
	}
	raft := map[string][]time.Duration{}
	for _, name := range []string{dispatchLog, replication, storeLogs, commitTime, fsmEnqueue, applyBatch} {
		raft[name] = s.take(name)
	}
	b.ReportMetric(float64(pct(api, 50).Microseconds()), "api_p50_µs")
	b.ReportMetric(float64(pct(floor, 50).Microseconds()), "fsync_p50_µs")
	if b.N < warmup {
		return // the one-round probe that go test runs first
	}
	printBudget(os.Stdout, b.N, api, plain, floor, node, raft)
}

// postAcquire sends one acquire to addr as a plain HTTP request.
func postAcquire(b *testing.B, hc *http.Client, addr, key string) {
	resp, err := hc.Post("http://"+addr+"/v1/acquire", "application/json",
		strings.NewReader(fmt.Sprintf(httpBody, key, "o-"+key)))
	if err != nil {
		b.Fatalf("POST /v1/acquire: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("POST /v1/acquire: %d %s", resp.StatusCode, bytes.TrimSpace(body))
	}
}

// histo is a histogram's count and sum.
type histo struct {
	n   uint64
	sum float64
}

func (h histo) minus(o histo) histo { return histo{h.n - o.n, h.sum - o.sum} }

func (h histo) mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.n) * float64(time.Second))
}

// acquireWait reads the node's request-to-grant histogram.
func acquireWait(b *testing.B, g prometheus.Gatherer, id string) histo {
	fams, err := g.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != waitSeries {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "node" && l.GetValue() == id {
					return histo{m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()}
				}
			}
		}
	}
	b.Fatalf("no %s of node %s", waitSeries, id)
	return histo{}
}

// sink keeps every timing raft reports, by name. The labelled name of a
// timing carries the samples of every peer; labels are dropped.
type sink struct {
	mu      sync.Mutex
	samples map[string][]float32 // µs
}

func (s *sink) add(key []string, v float32) {
	name := strings.Join(key, ".")
	s.mu.Lock()
	s.samples[name] = append(s.samples[name], v)
	s.mu.Unlock()
}

func (s *sink) AddSample(key []string, v float32) { s.add(key, v) }
func (s *sink) AddSampleWithLabels(key []string, v float32, _ []metrics.Label) {
	s.add(key, v)
}
func (*sink) SetGauge([]string, float32)                               {}
func (*sink) SetGaugeWithLabels([]string, float32, []metrics.Label)    {}
func (*sink) EmitKey([]string, float32)                                {}
func (*sink) IncrCounter([]string, float32)                            {}
func (*sink) IncrCounterWithLabels([]string, float32, []metrics.Label) {}

func (s *sink) reset() {
	s.mu.Lock()
	clear(s.samples)
	s.mu.Unlock()
}

func (s *sink) take(name string) []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]time.Duration, len(s.samples[name]))
	for i, v := range s.samples[name] {
		out[i] = time.Duration(float64(v) * float64(time.Microsecond))
	}
	return out
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

func mean(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return sum / time.Duration(len(d))
}

// printBudget writes the measured series and the budget they add up to,
// as markdown. The budget subtracts means, which add up where p50s do not.
func printBudget(w io.Writer, n int, api, plain, floor []time.Duration, node histo, raft map[string][]time.Duration) {
	fmt.Fprintf(w, "\n%d serial rounds, GOMAXPROCS=%d, %s\n\n", n, runtime.GOMAXPROCS(0), runtime.Version())
	fmt.Fprintln(w, "| measured | samples | p50 | p99 | mean |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: |")
	row := func(name string, d []time.Duration) {
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s |\n", name, len(d), us(pct(d, 50)), us(pct(d, 99)), us(mean(d)))
	}
	row("Go API: Make + Block on a free key", api)
	row("plain HTTP/1.1 POST /v1/acquire to the leader", plain)
	fmt.Fprintf(w, "| node: request to grant (%s, leader) | %d | | | %s |\n", waitSeries, node.n, us(node.mean()))
	for _, name := range []string{commitTime, dispatchLog, replication, storeLogs, fsmEnqueue, applyBatch} {
		row(name, raft[name])
	}
	row("bare write + fsync of a file on the same disk", floor)

	m := func(name string) time.Duration { return mean(raft[name]) }
	fmt.Fprintln(w, "\n| stage | mean | share |")
	fmt.Fprintln(w, "| --- | ---: | ---: |")
	total := mean(api)
	stage := func(name string, d time.Duration) {
		fmt.Fprintf(w, "| %s | %s | %.0f %% |\n", name, us(d), 100*float64(d)/float64(total))
	}
	// The rows add up to the Go API's mean: each is a difference of two
	// means measured over the same rounds. raft stores the leader's entry
	// before it sends it (dispatchLog, then the replication), so commitTime
	// is the leader's fsync and then the first follower's answer.
	stage("client (Manager, client, API stream) = Go API − plain HTTP", total-mean(plain))
	stage("HTTP (loopback, read, auth, decode, answer) = plain HTTP − node", mean(plain)-node.mean())
	stage("propose + answer (handoff, rounds, raft's queue, the grant back) = node − commitTime − apply", node.mean()-m(commitTime)-m(fsmEnqueue)-m(applyBatch))
	stage("leader fsync (dispatchLog)", m(dispatchLog))
	stage("replication + commit (network, codec, the follower's handling, the quorum seen) = commitTime − dispatchLog − follower fsync", m(commitTime)-m(dispatchLog)-m(storeLogs))
	stage("follower fsync (storeLogs)", m(storeLogs))
	stage("apply (fsm.enqueue + fsm.applyBatch)", m(fsmEnqueue)+m(applyBatch))
	stage("total: the Go API's mean", total)
	fmt.Fprintf(w, "\nfloor: one fsync p50 %s, two in series (leader, then a follower) %s; the Go API's p50 %s is %.1f× one fsync\n",
		us(pct(floor, 50)), us(2*pct(floor, 50)), us(pct(api, 50)), float64(pct(api, 50))/float64(pct(floor, 50)))
}

func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)) }
