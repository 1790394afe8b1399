package lock_test

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/drivers/memory"
	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/internal/testkit/naiveactor"
)

// benchWorkers is the number of parallel workers, each on its own key.
const benchWorkers = 32

// benchRounds interleaves the contenders, so that a burst of load from
// elsewhere on the machine hits all of them rather than one.
const benchRounds = 20

// cycler performs one cycle for one worker: acquire, (callback,) release.
type cycler func(ctx context.Context, worker int, seq int) error

type contender struct {
	name  string
	cycle cycler
	wall  time.Duration
	cpu   time.Duration
	ops   int
}

// BenchmarkManagerTry compares, in one run, a Try cycle through the Manager
// on the memory driver (acquire, empty callback, release) and a
// Make + Block + Release cycle with the same cycle on the engine alone
// (Acquire then Release, a fresh owner per cycle), on the memory driver
// alone, and on a naive channel actor (internal/testkit/naiveactor: what a first
// in-process lock looks like). 32 workers, each on its own key; defaults
// everywhere.
//
// Reported: cycles/s of each, and the ratios to the engine and to the
// naive actor by wall time, and manager/engine by CPU time. On a machine
// shared with other work the CPU ratio is the steadier of the two.
func BenchmarkManagerTry(b *testing.B) {
	const ttl = time.Minute
	e, err := engine.New(engine.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	d, err := memory.New(memory.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	m, err := lock.Open(context.Background(), lock.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	mr, err := lock.Open(context.Background(), lock.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer mr.Close()

	owners := make([]string, 1024) // 32 hex digits, like the Manager's tokens
	for i := range owners {
		owners[i] = fmt.Sprintf("%032x", i)
	}
	keys := make([]string, benchWorkers)
	sets := make([][]string, benchWorkers) // each worker's key as a request's set of one, made once
	for w := range keys {
		keys[w] = fmt.Sprintf("zerotal_lock:bench:%02d", w)
		sets[w] = keys[w : w+1 : w+1]
	}
	userKeys := make([]string, benchWorkers)
	for w := range userKeys {
		userKeys[w] = fmt.Sprintf("bench:%02d", w)
	}

	naive := naiveactor.New()
	defer naive.Close()

	contenders := []*contender{
		{name: "naive", cycle: func(_ context.Context, w, i int) error {
			owner := owners[i%len(owners)]
			if !naive.TryAcquire(keys[w], owner) {
				return fmt.Errorf("naive acquire of a free key failed")
			}
			naive.Release(keys[w], owner)
			return nil
		}},
		{name: "engine", cycle: func(ctx context.Context, w, i int) error {
			owner := owners[i%len(owners)]
			var one [1]engine.Grant // as the memory driver passes it
			grants, _, err := e.Acquire(ctx, engine.AcquireRequest{Keys: sets[w], Owner: owner, TTL: ttl}, one[:0])
			if err != nil || grants == nil {
				return fmt.Errorf("engine acquire: %v %w", grants != nil, err)
			}
			_, err = e.Release(ctx, keys[w], owner)
			return err
		}},
		{name: "driver", cycle: func(ctx context.Context, w, i int) error {
			owner := owners[i%len(owners)]
			if _, ok, err := driverstest.Take(ctx, d, keys[w], owner, ttl); err != nil || !ok {
				return fmt.Errorf("driver acquire: %v %w", ok, err)
			}
			_, err := d.Release(ctx, keys[w], owner)
			return err
		}},
		{name: "manager", cycle: func(ctx context.Context, w, _ int) error {
			return m.Try(ctx, userKeys[w], ttl, noop)
		}},
		{name: "make-block", cycle: func(ctx context.Context, w, _ int) error {
			l := m.Make(userKeys[w], ttl)
			if err := l.Block(ctx, 0); err != nil {
				return err
			}
			return l.Release(ctx)
		}},
		{name: "harness-shape", cycle: func(ctx context.Context, w, _ int) error {
			// As ../shared/bench calls it: a wait bound on the run's ctx
			// and a release on a fresh timeout ctx.
			l := m.Make(userKeys[w], ttl)
			if err := l.Block(ctx, 5*time.Second); err != nil {
				return err
			}
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			return l.Release(rctx)
		}},
		{name: "manager-refresh", cycle: func(ctx context.Context, w, _ int) error {
			return mr.Try(ctx, userKeys[w], ttl, noop, lock.WithRefresh())
		}},
	}

	perWorker := max(b.N/benchWorkers/benchRounds, 1)
	for _, c := range contenders { // warm up
		if err := runWorkers(c, 100); err != nil {
			b.Fatal(err)
		}
		c.wall, c.cpu, c.ops = 0, 0, 0
	}
	b.ResetTimer()
	for range benchRounds {
		for _, c := range contenders {
			if err := runWorkers(c, perWorker); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	byName := map[string]*contender{}
	for _, c := range contenders {
		byName[c.name] = c
		b.ReportMetric(float64(c.ops)/c.wall.Seconds(), c.name+"-cycles/s")
	}
	eng, mgr := byName["engine"], byName["manager"]
	b.ReportMetric(eng.wall.Seconds()/mgr.wall.Seconds(), "manager/engine")
	b.ReportMetric(eng.cpu.Seconds()/mgr.cpu.Seconds(), "cpu-manager/engine")
	b.ReportMetric(eng.wall.Seconds()/byName["manager-refresh"].wall.Seconds(), "refresh/engine")
	nv := byName["naive"]
	b.ReportMetric(nv.wall.Seconds()/mgr.wall.Seconds(), "try/naive")
	b.ReportMetric(nv.wall.Seconds()/byName["make-block"].wall.Seconds(), "make-block/naive")
	b.ReportMetric(nv.wall.Seconds()/byName["harness-shape"].wall.Seconds(), "harness-shape/naive")
	b.ReportMetric(nv.wall.Seconds()/eng.wall.Seconds(), "engine/naive")
}

// BenchmarkManagerCycle: one caller on one free key of the memory
// driver, with allocations: Try, Block (which takes Try's path on a
// driver with InstantAcquire), and a handle's Block and Release. Beside
// BenchmarkDriverCycle (drivers/memory) it is the Manager's own cost.
func BenchmarkManagerCycle(b *testing.B) {
	m, err := lock.Open(context.Background(), lock.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		cycle func() error
	}{
		{"try", func() error { return m.Try(ctx, "k", time.Minute, noop) }},
		{"block", func() error { return m.Block(ctx, "k", time.Minute, noop) }},
		{"make-block-release", func() error {
			l := m.Make("k", time.Minute)
			if err := l.Block(ctx, 0); err != nil {
				return err
			}
			return l.Release(ctx)
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.cycle(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// runWorkers runs n cycles on each of benchWorkers goroutines and adds the
// wall and CPU time they took to c.
func runWorkers(c *contender, n int) error {
	ctx := context.Background()
	errs := make(chan error, benchWorkers)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for w := range benchWorkers {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			for i := range n {
				if err := c.cycle(ctx, w, i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	ready.Wait()
	wall0, cpu0 := time.Now(), cpuClock()
	close(start)
	done.Wait()
	c.wall += time.Since(wall0)
	c.cpu += cpuClock() - cpu0
	c.ops += n * benchWorkers
	close(errs)
	return <-errs
}

// cpuClock reports the CPU time this process has used so far.
func cpuClock() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
