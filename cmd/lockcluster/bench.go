package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/zerotal/lock"
)

const benchExamples = `  # 32 workers on distinct keys against a running cluster, 10 s
  lockcluster bench --driver cluster --addrs 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003

  # 8 workers contending for one key (each waits until it gets it)
  lockcluster bench --workers 8 --keys 1

  # the same load on the in-process engine and on a SQLite file, for comparison
  lockcluster bench --driver memory
  lockcluster bench --driver sqlite --sqlite-path /tmp/bench.db

One operation = one successful acquire (waiting until the key is granted) then one release.
`

// benchResult is what one bench run measured.
type benchResult struct {
	cycles   int
	errors   int
	elapsed  time.Duration
	acquire  []time.Duration
	release  []time.Duration
	firstErr error
}

// runBench measures acquire/release cycles per second on any driver.
func runBench(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "bench", "bench [--driver NAME] [--workers N] [--keys N] [--duration D] [--ttl D]", benchExamples)
	var df driverFlags
	df.register(fs, e, "cluster")
	workers := fs.Int("workers", 32, "concurrent workers")
	keys := fs.Int("keys", 0, "number of keys the workers share (0: one key per worker; 1: one hot key)")
	duration := fs.Duration("duration", 10*time.Second, "how long to measure (after the warm-up)")
	warmup := fs.Duration("warmup", time.Second, "how long to run before measuring")
	ttl := fs.Duration("ttl", 10*time.Second, "TTL of every acquisition")
	if code, done := parse(fs, e, args); done {
		return code
	}
	if *workers <= 0 || *workers > 4096 || *keys < 0 || *duration <= 0 || *duration > time.Hour || *warmup < 0 {
		return usageError(e, "bench", "need 1 <= --workers <= 4096, --keys >= 0, 0 < --duration <= 1h, --warmup >= 0")
	}
	nkeys := *keys
	if nkeys == 0 {
		nkeys = *workers
	}
	cfg := df.config(e)
	m, err := openManager(ctx, cfg)
	if err != nil {
		fmt.Fprintf(e.stderr, "lockcluster bench: %v\n", err)
		return exitCodeFor(err)
	}
	defer m.Close()
	fmt.Fprintf(e.stdout, "driver=%s workers=%d keys=%d duration=%s warmup=%s ttl=%s\n",
		cfg.Driver, *workers, nkeys, *duration, *warmup, *ttl)
	res := benchRun(ctx, m, *workers, nkeys, *warmup, *duration, *ttl)
	printBench(e.stdout, res)
	if res.firstErr != nil {
		fmt.Fprintf(e.stderr, "lockcluster bench: first error: %v\n", res.firstErr)
	}
	if res.cycles == 0 {
		return exitFailure
	}
	return exitOK
}

// benchRun runs workers for warmup+duration and records the cycles that
// started after the warm-up.
func benchRun(ctx context.Context, m *lock.Manager, workers, nkeys int, warmup, duration, ttl time.Duration) benchResult {
	start := time.Now()
	measureFrom := start.Add(warmup)
	end := measureFrom.Add(duration)
	ctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()

	var mu sync.Mutex
	var total benchResult
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			key := fmt.Sprintf("bench:%d", w%nkeys)
			var r benchResult
			for ctx.Err() == nil {
				left := time.Until(end)
				if left <= 0 {
					break
				}
				l := m.Make(key, ttl)
				t0 := time.Now()
				err := l.Block(ctx, left)
				t1 := time.Now()
				if err != nil {
					if ctx.Err() == nil && !errors.Is(err, lock.ErrNotAcquired) {
						r.errors++
						if r.firstErr == nil {
							r.firstErr = err
						}
					}
					continue
				}
				// Release on a context of its own: the last cycle still frees its key.
				rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				err = l.Release(rctx)
				rcancel()
				t2 := time.Now()
				if err != nil {
					r.errors++
					if r.firstErr == nil {
						r.firstErr = err
					}
					continue
				}
				if t0.After(measureFrom) && t2.Before(end) {
					r.cycles++
					r.acquire = append(r.acquire, t1.Sub(t0))
					r.release = append(r.release, t2.Sub(t1))
				}
			}
			mu.Lock()
			total.cycles += r.cycles
			total.errors += r.errors
			total.acquire = append(total.acquire, r.acquire...)
			total.release = append(total.release, r.release...)
			if total.firstErr == nil {
				total.firstErr = r.firstErr
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	total.elapsed = duration
	if now := time.Now(); now.Before(end) { // cut short by the caller
		total.elapsed = max(now.Sub(measureFrom), time.Millisecond)
	}
	return total
}

func printBench(w io.Writer, r benchResult) {
	fmt.Fprintf(w, "cycles    %d in %s = %.1f/s\n", r.cycles, r.elapsed.Round(time.Millisecond), float64(r.cycles)/r.elapsed.Seconds())
	fmt.Fprintf(w, "acquire   p50 %s  p99 %s\n", fmtDur(percentile(r.acquire, 50)), fmtDur(percentile(r.acquire, 99)))
	fmt.Fprintf(w, "release   p50 %s  p99 %s\n", fmtDur(percentile(r.release, 50)), fmtDur(percentile(r.release, 99)))
	fmt.Fprintf(w, "errors    %d\n", r.errors)
}

// percentile returns the p-th percentile (nearest rank) of ds; it sorts ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(float64(len(ds))*p/100+0.5) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.1fµs", float64(d)/float64(time.Microsecond))
	}
}
