package engine

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The scale benchmarks measure how the cost of the engine grows with the
// work it holds: held locks, waiters, a snapshot of a large table, and an
// expiry storm. They run once each (-benchtime 1x) and report their own
// figures; `make bench-scale` runs them:
//
//	go test -run '^$' -bench Scale -benchtime 1x -timeout 30m ./engine/
//
// ZEROTAL_SCALE_MAX (default 1000000) caps the largest table, for a quick
// look on a small machine.

func scaleMax() int {
	if v, err := strconv.Atoi(os.Getenv("ZEROTAL_SCALE_MAX")); err == nil && v > 0 {
		return v
	}
	return 1_000_000
}

// heapInUse is the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// fill holds n keys named prefix+i for an hour.
func fill(tb testing.TB, e *Engine, prefix string, n int) {
	tb.Helper()
	ctx := context.Background()
	owner := "0123456789abcdef0123456789abcdef" // the size of a Manager's token
	for i := range n {
		if _, ok, err := e.acquireOne(ctx, prefix+strconv.Itoa(i), owner, time.Hour); err != nil || !ok {
			tb.Fatalf("fill %d: ok=%v err=%v", i, ok, err)
		}
	}
}

// cycleStats is what cycling workers measured.
type cycleStats struct {
	rate float64       // cycles per second
	p99  time.Duration // of one acquire + release cycle
	max  time.Duration
}

// cycle runs workers goroutines, each acquiring and releasing fresh keys,
// for d, or until stop closes when stop is not nil.
func cycle(e *Engine, workers int, d time.Duration, stop <-chan struct{}) cycleStats {
	ctx := context.Background()
	var wg sync.WaitGroup
	var n atomic.Int64
	lat := make([][]time.Duration, workers)
	end := time.Now().Add(d)
	start := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("%032x", w)
			for i := 0; ; i++ {
				if stop != nil {
					select {
					case <-stop:
						return
					default:
					}
				} else if time.Now().After(end) {
					return
				}
				key := fmt.Sprintf("cycle:%d:%d", w, i)
				t0 := time.Now()
				if _, ok, err := e.acquireOne(ctx, key, owner, time.Minute); err != nil || !ok {
					panic(fmt.Sprintf("cycle acquire: %v %v", ok, err))
				}
				if _, err := e.Release(ctx, key, owner); err != nil {
					panic(err)
				}
				lat[w] = append(lat[w], time.Since(t0))
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	all := slices.Concat(lat...)
	slices.Sort(all)
	s := cycleStats{rate: float64(n.Load()) / time.Since(start).Seconds()}
	if len(all) > 0 {
		s.p99 = all[len(all)*99/100]
		s.max = all[len(all)-1]
	}
	return s
}

// BenchmarkScaleHeld measures, at 1 k, 100 k and 1 M held locks, the heap
// each held lock costs and the rate and p99 of 16 workers cycling fresh
// keys beside them, as a ratio to the rate at 1 k; and how long a
// snapshot of the table takes, with the longest cycle a worker saw
// meanwhile (the loop is busy for part of it).
func BenchmarkScaleHeld(b *testing.B) {
	const workers = 16
	const window = 2 * time.Second
	var base float64
	for _, n := range []int{1_000, 100_000, 1_000_000} {
		if n > scaleMax() {
			break
		}
		e, err := New(Config{MaxKeys: -1})
		if err != nil {
			b.Fatal(err)
		}
		before := heapInUse()
		fill(b, e, "held:", n)
		perLock := float64(heapInUse()-before) / float64(n)
		s := cycle(e, workers, window, nil)
		if base == 0 {
			base = s.rate
		}

		stop := make(chan struct{})
		during := make(chan cycleStats)
		go func() { during <- cycle(e, workers, 0, stop) }()
		t0 := time.Now()
		frozen, err := e.Freeze(context.Background())
		pause := time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		snap := frozen.Encode()
		took := time.Since(t0)
		close(stop)
		ds := <-during
		t1 := time.Now()
		e2, err := New(Config{MaxKeys: -1})
		if err != nil {
			b.Fatal(err)
		}
		if err := e2.Restore(context.Background(), snap); err != nil {
			b.Fatal(err)
		}
		restore := time.Since(t1)
		b.Logf("held %8d: %5.0f B/lock heap; %7.0f cycles/s (%.2fx of 1k), p99 %v; snapshot %d B in %v (%.0f B/lock), the loop paused %v for it, longest cycle meanwhile %v; restore %v",
			n, perLock, s.rate, s.rate/base, s.p99.Round(time.Microsecond), len(snap), took.Round(time.Millisecond),
			float64(len(snap))/float64(n), pause.Round(time.Microsecond), ds.max.Round(time.Microsecond), restore.Round(time.Millisecond))
		b.ReportMetric(perLock, fmt.Sprintf("B/lock@%d", n))
		b.ReportMetric(s.rate/base, fmt.Sprintf("rate@%d/rate@1k", n))
		b.ReportMetric(float64(took.Milliseconds()), fmt.Sprintf("snapshot-ms@%d", n))
		b.ReportMetric(float64(pause.Microseconds()), fmt.Sprintf("pause-us@%d", n))
		b.ReportMetric(float64(ds.max.Microseconds()), fmt.Sprintf("longest-cycle-us@%d", n))
		_ = e2.Close()
		_ = e.Close()
	}
}

// BenchmarkScaleWaiters measures, in the table itself (no goroutines),
// what one waiter costs as the queue grows: queuing one more, handing the
// key on (release to the head), cancelling one from the middle of the
// queue, and the heap per waiter; with 8 and with 10 k waiters on one key,
// and with 100 k waiters spread over 1 k keys.
func BenchmarkScaleWaiters(b *testing.B) {
	for _, c := range []struct {
		name       string
		keys, each int
	}{{"8-on-one-key", 1, 8}, {"10k-on-one-key", 1, 10_000}, {"100k-over-1k-keys", 1_000, 100}} {
		t := newTable(-1, -1)
		owner := func(k, i int) string { return fmt.Sprintf("%016x%016x", k, i) }
		for k := range c.keys {
			t.take("w:"+strconv.Itoa(k), "holder", time.Hour, Claim{}, false)
		}
		before := heapInUse()
		for k := range c.keys {
			key := "w:" + strconv.Itoa(k)
			for i := range c.each {
				if o := t.take(key, owner(k, i), time.Hour, Claim{}, true); !o.queued {
					b.Fatalf("not queued: %+v", o)
				}
			}
		}
		perWaiter := float64(heapInUse()-before) / float64(c.keys*c.each)

		// queue one more, then cancel it from the middle: remove the
		// waiter half-way, then put it back at the tail, on key 0.
		const rounds = 2_000
		key := "w:0"
		mid := owner(0, c.each/2)
		t0 := time.Now()
		for range rounds {
			if !t.cancelWait(key, mid, 0).ok {
				b.Fatal("cancel: not found")
			}
			t.take(key, mid, time.Hour, Claim{}, true)
		}
		cancelAndQueue := time.Since(t0) / rounds

		// hand-offs: the holder releases, the head gets the key, and
		// queues again at the tail, so the queue keeps its length.
		holder := "holder"
		t0 = time.Now()
		for range rounds {
			o := t.release(key, holder, 0)
			if !o.handoff {
				b.Fatalf("no hand-off: %+v", o)
			}
			t.take(key, holder, time.Hour, Claim{}, true)
			holder = o.next.Owner
		}
		handoff := time.Since(t0) / rounds
		b.Logf("%-18s: %4.0f B/waiter; cancel from the middle + queue again %v; hand-off + queue again %v",
			c.name, perWaiter, cancelAndQueue, handoff)
		b.ReportMetric(perWaiter, "B/waiter:"+c.name)
		b.ReportMetric(float64(cancelAndQueue.Nanoseconds()), "cancel-ns:"+c.name)
		b.ReportMetric(float64(handoff.Nanoseconds()), "handoff-ns:"+c.name)
	}
}

// BenchmarkScaleExpiryStorm holds 100 k locks that all end in the same
// second and measures the rate of 16 workers cycling other keys during
// that second, as a ratio to their rate before it.
func BenchmarkScaleExpiryStorm(b *testing.B) {
	n := min(100_000, scaleMax())
	const workers = 16
	e, err := New(Config{MaxKeys: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	quiet := cycle(e, workers, time.Second, nil)
	ttl := 3 * time.Second
	ctx := context.Background()
	t0 := time.Now()
	for i := range n {
		// spread the deadlines over one second at most
		if _, ok, err := e.acquireOne(ctx, "storm:"+strconv.Itoa(i), "o", ttl); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
	filled := time.Since(t0)
	if filled > ttl-time.Second {
		b.Fatalf("filling took %v: no time left to measure before the storm", filled)
	}
	time.Sleep(time.Until(t0.Add(ttl))) // wait for the storm itself, not synchronisation
	storm := cycle(e, workers, filled+time.Second, nil)
	if left := e.Len(); left != 0 {
		b.Fatalf("%d locks left after the storm", left)
	}
	b.Logf("expiry storm: %d locks ending within %v; workers' rate %0.f/s before, %0.f/s during (%.2fx), p99 %v → %v, longest cycle %v",
		n, filled.Round(time.Millisecond), quiet.rate, storm.rate, storm.rate/quiet.rate, quiet.p99.Round(time.Microsecond),
		storm.p99.Round(time.Microsecond), storm.max.Round(time.Microsecond))
	b.ReportMetric(storm.rate/quiet.rate, "storm/quiet")
}
