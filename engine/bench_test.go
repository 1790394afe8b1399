package engine

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerotal/lock/internal/testkit/naiveactor"
)

// Benchmarks compare the engine with two baselines inside the same run:
//
//   - mutex: sync.Mutex + map, no TTL, no owner check, spinning when busy
//     (the in-process floor);
//   - naive: a channel actor with a new reply channel per call, no
//     batching, spinning (retrying) when the key is busy.
//
// Each benchmark runs every implementation for b.N lock cycles (one
// successful acquire + one release) and reports their rates and ratios.
//
//	go test -run '^$' -bench . -benchtime 200000x ./engine/

// locker is what a benchmark drives.
type locker interface {
	tryAcquire(key, owner string) bool
	waitAcquire(key, owner string) // blocks until held
	release(key, owner string)
	close()
}

// ---- baseline (a): mutex + map ----

type mutexLocker struct {
	mu sync.Mutex
	m  map[string]string
}

func newMutexLocker() *mutexLocker { return &mutexLocker{m: map[string]string{}} }

func (l *mutexLocker) tryAcquire(key, owner string) bool {
	l.mu.Lock()
	_, busy := l.m[key]
	if !busy {
		l.m[key] = owner
	}
	l.mu.Unlock()
	return !busy
}

func (l *mutexLocker) waitAcquire(key, owner string) {
	for !l.tryAcquire(key, owner) {
		runtime.Gosched()
	}
}

func (l *mutexLocker) release(key, owner string) {
	l.mu.Lock()
	if l.m[key] == owner {
		delete(l.m, key)
	}
	l.mu.Unlock()
}

func (l *mutexLocker) close() {}

// ---- baseline (b): naive channel actor ----

// naiveLocker drives internal/testkit/naiveactor.
type naiveLocker struct{ *naiveactor.Actor }

func newNaiveActor() naiveLocker { return naiveLocker{naiveactor.New()} }

func (a naiveLocker) tryAcquire(key, owner string) bool { return a.TryAcquire(key, owner) }
func (a naiveLocker) waitAcquire(key, owner string)     { a.WaitAcquire(key, owner) }
func (a naiveLocker) release(key, owner string)         { a.Release(key, owner) }
func (a naiveLocker) close()                            { a.Close() }

// ---- the engine ----

type engineLocker struct{ e *Engine }

const benchTTL = time.Minute

func newEngineLocker(b *testing.B) *engineLocker {
	e, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	return &engineLocker{e: e}
}

func (l *engineLocker) tryAcquire(key, owner string) bool {
	_, ok, err := l.e.acquireOne(context.Background(), key, owner, benchTTL)
	return ok && err == nil
}

func (l *engineLocker) waitAcquire(key, owner string) {
	if _, err := l.e.acquireOneWait(context.Background(), key, owner, benchTTL); err != nil {
		panic(err)
	}
}

func (l *engineLocker) release(key, owner string) {
	if ok, err := l.e.Release(context.Background(), key, owner); !ok || err != nil {
		panic(fmt.Sprint("release failed: ", ok, err))
	}
}

func (l *engineLocker) close() { _ = l.e.Close() }

type impl struct {
	name string
	make func(b *testing.B) locker
}

var impls = []impl{
	{"mutex", func(*testing.B) locker { return newMutexLocker() }},
	{"naive", func(*testing.B) locker { return newNaiveActor() }},
	{"engine", func(b *testing.B) locker { return newEngineLocker(b) }},
}

// runStats is what one implementation did in one scenario.
type runStats struct {
	cyclesPerSec float64
	latencies    []time.Duration // acquire latency, one per cycle (when sampled)
	perWorker    []int
}

func (s runStats) pct(p float64) time.Duration {
	if len(s.latencies) == 0 {
		return 0
	}
	return s.latencies[int(p*float64(len(s.latencies)-1))]
}

// run drives workers goroutines for n cycles in total; keyOf picks each
// worker's key; wait makes acquires block instead of failing.
func run(l locker, workers, n int, keyOf func(w int) string, wait, sample bool) runStats {
	per := (n + workers - 1) / workers
	lat := make([][]time.Duration, workers)
	counts := make([]int, workers)
	var start, ready sync.WaitGroup
	start.Add(1)
	ready.Add(workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		key, owner := keyOf(w), fmt.Sprintf("owner-%02d-0123456789abcdef0123456", w)
		if sample {
			lat[w] = make([]time.Duration, 0, per)
		}
		go func() {
			defer wg.Done()
			ready.Done()
			start.Wait()
			for range per {
				var t0 time.Time
				if sample {
					t0 = time.Now()
				}
				if wait {
					l.waitAcquire(key, owner)
				} else {
					for !l.tryAcquire(key, owner) {
					}
				}
				if sample {
					lat[w] = append(lat[w], time.Since(t0))
				}
				counts[w]++
				l.release(key, owner)
			}
		}()
	}
	ready.Wait()
	t0 := time.Now()
	start.Done()
	wg.Wait()
	el := time.Since(t0)
	s := runStats{cyclesPerSec: float64(per*workers) / el.Seconds(), perWorker: counts}
	for _, l := range lat {
		s.latencies = append(s.latencies, l...)
	}
	slices.Sort(s.latencies)
	return s
}

// rounds interleaves the implementations so that a change in the load of
// the machine during the run affects them alike.
const rounds = 4

// compare runs every implementation for n cycles in total, in rounds,
// and merges each one's statistics.
func compare(b *testing.B, workers int, keyOf func(int) string, wait, sample bool) map[string]runStats {
	lockers := make([]locker, len(impls))
	for i, im := range impls {
		lockers[i] = im.make(b)
		run(lockers[i], workers, workers*100, keyOf, wait, false) // warm up
	}
	stats := map[string]runStats{}
	elapsed := map[string]float64{}
	cycles := map[string]float64{}
	for range rounds {
		for i, im := range impls {
			runtime.GC() // the naive actor's garbage must not be collected during the next round
			s := run(lockers[i], workers, max(b.N/rounds, workers), keyOf, wait, sample)
			c := float64(max(b.N/rounds, workers))
			cycles[im.name] += c
			elapsed[im.name] += c / s.cyclesPerSec
			all := stats[im.name]
			all.latencies = append(all.latencies, s.latencies...)
			if all.perWorker == nil {
				all.perWorker = make([]int, workers)
			}
			for w, k := range s.perWorker {
				all.perWorker[w] += k
			}
			stats[im.name] = all
		}
	}
	for i, im := range impls {
		lockers[i].close()
		s := stats[im.name]
		s.cyclesPerSec = cycles[im.name] / elapsed[im.name]
		slices.Sort(s.latencies)
		stats[im.name] = s
	}
	return stats
}

// BenchmarkSpread: 32 workers, each on its own key, acquire+release.
func BenchmarkSpread(b *testing.B) {
	stats := compare(b, 32, distinctKeys, false, false)
	report(b, stats, "cycles/s")
	b.ReportMetric(stats["engine"].cyclesPerSec/stats["naive"].cyclesPerSec, "engine/naive")
	b.ReportMetric(stats["engine"].cyclesPerSec/stats["mutex"].cyclesPerSec, "engine/mutex")
}

func distinctKeys(w int) string { return fmt.Sprintf("spread/%02d", w) }

func oneKey(int) string { return "hot" }

// BenchmarkHot: 8 workers contend for one key, each waiting until it gets
// it. The engine queues them FIFO; the baselines spin.
func BenchmarkHot(b *testing.B) {
	stats := compare(b, 8, oneKey, true, true)
	report(b, stats, "cycles/s")
	en := stats["engine"]
	b.ReportMetric(en.cyclesPerSec/stats["naive"].cyclesPerSec, "engine/naive")
	b.ReportMetric(float64(en.pct(0.5).Nanoseconds()), "engine_p50_ns")
	b.ReportMetric(float64(en.pct(0.99).Nanoseconds()), "engine_p99_ns")
	b.ReportMetric(float64(en.pct(0.99))/float64(max(en.pct(0.5), 1)), "engine_p99/p50")
	b.ReportMetric(float64(stats["naive"].pct(0.99))/float64(max(stats["naive"].pct(0.5), 1)), "naive_p99/p50")
	// Fairness: the least served worker's share of the mean.
	b.ReportMetric(fairness(en.perWorker), "engine_min/mean")
}

func fairness(counts []int) float64 {
	total, least := 0, counts[0]
	for _, c := range counts {
		total += c
		least = min(least, c)
	}
	return float64(least) / (float64(total) / float64(len(counts)))
}

func report(b *testing.B, stats map[string]runStats, unit string) {
	for _, im := range impls {
		b.ReportMetric(stats[im.name].cyclesPerSec, im.name+"_"+unit)
	}
	b.ReportMetric(0, "ns/op")
}

// BenchmarkHandoffLatency: the time from a holder calling Release to the
// blocked waiter running with the key. Baseline: an unbuffered channel
// send waking a blocked receiver (the floor for any hand-off between
// goroutines).
func BenchmarkHandoffLatency(b *testing.B) {
	floor := make([]time.Duration, 0, b.N)
	ch := make(chan time.Time)
	doneFloor := make(chan struct{})
	go func() {
		for t0 := range ch {
			floor = append(floor, time.Since(t0))
		}
		close(doneFloor)
	}()
	for range b.N {
		ch <- time.Now()
	}
	close(ch)
	<-doneFloor

	e, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	sent := make(chan time.Time, 1)
	got := make(chan time.Duration, 1)
	for i := range b.N {
		holder, waiter := "h", "w"
		if i%2 == 1 {
			holder, waiter = "w", "h"
		}
		if i == 0 {
			e.acquireOne(ctx, "k", holder, benchTTL)
		}
		go func() {
			_, err := e.acquireOneWait(ctx, "k", waiter, benchTTL)
			if err != nil {
				panic(err)
			}
			got <- time.Since(<-sent)
		}()
		for {
			if info, _, _ := e.Get(ctx, "k"); info.Waiters == 1 {
				break
			}
			runtime.Gosched()
		}
		t0 := time.Now()
		sent <- t0
		e.Release(ctx, "k", holder)
		lat = append(lat, <-got)
	}
	slices.Sort(lat)
	slices.Sort(floor)
	p := func(s []time.Duration, q float64) float64 { return float64(s[int(q*float64(len(s)-1))].Nanoseconds()) }
	b.ReportMetric(p(lat, 0.5), "engine_p50_ns")
	b.ReportMetric(p(lat, 0.99), "engine_p99_ns")
	b.ReportMetric(p(floor, 0.5), "chan_p50_ns")
	b.ReportMetric(p(lat, 0.5)/max(p(floor, 0.5), 1), "engine/chan_p50")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkMemoryPerLock: heap bytes per held lock at 1 M held locks,
// beyond the key bytes (keys are built before the first measurement; the
// 32-byte owner tokens are counted). Baseline: map[string]string. The
// measurement runs once whatever b.N is.
func BenchmarkMemoryPerLock(b *testing.B) {
	for range b.N {
	}
	const n = 1 << 20
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%08d", i)
	}
	owner := func(i int) string { return fmt.Sprintf("owner-%026d", i) } // 32 bytes
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	{
		before := heap()
		m := map[string]string{}
		for i, k := range keys {
			m[k] = owner(i)
		}
		floor := float64(heap()-before) / n
		runtime.KeepAlive(m)
		m = nil

		before = heap()
		e, err := New(Config{})
		if err != nil {
			b.Fatal(err)
		}
		var wg sync.WaitGroup
		const workers = 8
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < n; i += workers {
					if _, ok, err := e.acquireOne(context.Background(), keys[i], owner(i), time.Hour); !ok || err != nil {
						panic("acquire failed")
					}
				}
			}()
		}
		wg.Wait()
		per := float64(heap()-before) / n
		if e.Len() != n {
			b.Fatalf("Len = %d", e.Len())
		}
		_ = e.Close()
		b.ReportMetric(per, "engine_B/lock")
		b.ReportMetric(floor, "map_B/lock")
	}
	b.ReportMetric(0, "ns/op")
}

// BenchmarkEngineAcquireRelease: one caller, one key, the plain cost of a
// cycle (two round trips), with allocations.
func BenchmarkEngineAcquireRelease(b *testing.B) {
	e, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	req := AcquireRequest{Keys: []string{"k"}, Owner: "owner", TTL: benchTTL} // as the memory driver's caller makes it: once
	b.ReportAllocs()
	for b.Loop() {
		var into [1]Grant
		if g, _, err := e.Acquire(ctx, req, into[:0]); g == nil || err != nil {
			b.Fatal("acquire failed")
		}
		if ok, err := e.Release(ctx, "k", "owner"); !ok || err != nil {
			b.Fatal("release failed")
		}
	}
}

// BenchmarkEngineParallel: RunParallel with 16 goroutines per CPU, each on
// its own key, with allocations.
func BenchmarkEngineParallel(b *testing.B) {
	e, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	var next atomic.Int64
	b.SetParallelism(16)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		key := fmt.Sprint("p", next.Add(1))
		req := AcquireRequest{Keys: []string{key}, Owner: "owner", TTL: benchTTL}
		for pb.Next() {
			var into [1]Grant
			if g, _, err := e.Acquire(ctx, req, into[:0]); g == nil || err != nil {
				panic("acquire failed")
			}
			if ok, err := e.Release(ctx, key, "owner"); !ok || err != nil {
				panic("release failed")
			}
		}
	})
}
