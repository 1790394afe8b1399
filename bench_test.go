package lock_test

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers/memory"
	"github.com/zerotal/lock/engine"
)

// benchWorkers is the number of parallel workers per benchmark, each on its
// own key, whatever GOMAXPROCS is.
const benchWorkers = 32

// cpuClock reports the CPU time this process has used. On a shared machine
// wall time per op depends on what else runs; CPU time per op does not,
// so the benchmarks report both.
func cpuClock() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measure runs body in parallel on benchWorkers goroutines and adds the
// CPU time per op to the report.
func measure(b *testing.B, body func(pb *testing.PB, worker int64)) {
	var worker atomic.Int64
	b.SetParallelism(parallelism())
	b.ResetTimer()
	start := cpuClock()
	b.RunParallel(func(pb *testing.PB) { body(pb, worker.Add(1)) })
	b.StopTimer()
	b.ReportMetric(float64(cpuClock()-start)/float64(b.N), "cpu-ns/op")
}

// parallelism makes b.RunParallel start benchWorkers goroutines.
func parallelism() int {
	p := benchWorkers / runtime.GOMAXPROCS(0)
	return max(p, 1)
}

// BenchmarkManagerTry compares, in one run, a Try cycle on the memory
// driver (acquire, empty callback, release) with the bare engine cycle
// underneath it (Acquire then Release), and the memory driver alone. Read
// the ratios between the sub-benchmarks: engine/manager is the cost of the
// portable API.
func BenchmarkManagerTry(b *testing.B) {
	const ttl = time.Minute
	b.Run("engine", func(b *testing.B) {
		e, err := engine.New(engine.Config{})
		if err != nil {
			b.Fatal(err)
		}
		defer e.Close()
		ctx := context.Background()
		measure(b, func(pb *testing.PB, worker int64) {
			key := "zerotal_lock:bench:" + strconv.FormatInt(worker, 10)
			for i := 0; pb.Next(); i++ {
				owner := strconv.Itoa(i) // a fresh owner per cycle, as the Manager uses
				if _, ok, err := e.Acquire(ctx, key, owner, ttl); err != nil || !ok {
					b.Fatalf("engine acquire: %v %v", ok, err)
				}
				if _, err := e.Release(ctx, key, owner); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("driver", func(b *testing.B) {
		d, err := memory.New(memory.Config{})
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		ctx := context.Background()
		measure(b, func(pb *testing.PB, worker int64) {
			key := "zerotal_lock:bench:" + strconv.FormatInt(worker, 10)
			for i := 0; pb.Next(); i++ {
				owner := strconv.Itoa(i)
				if _, ok, err := d.Acquire(ctx, key, owner, ttl); err != nil || !ok {
					b.Fatalf("driver acquire: %v %v", ok, err)
				}
				if _, err := d.Release(ctx, key, owner); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	for _, bc := range []struct {
		name string
		opts []lock.Option
	}{
		{"manager", nil},
		{"manager-refresh", []lock.Option{lock.WithRefresh()}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m, err := lock.Open(context.Background(), lock.Config{})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			ctx := context.Background()
			measure(b, func(pb *testing.PB, worker int64) {
				key := "bench:" + strconv.FormatInt(worker, 10)
				for pb.Next() {
					if err := m.Try(ctx, key, ttl, noop, bc.opts...); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
