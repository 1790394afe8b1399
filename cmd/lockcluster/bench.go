package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/zerotal/lock"
)

const benchExamples = `  # 32 workers on distinct keys against a running cluster, 10 s
  lockcluster bench --driver cluster --endpoints 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003

  # 8 workers contending for one key (each waits until it gets it)
  lockcluster bench --workers 8 --keys 1

  # the same load on the in-process engine and on a SQLite file, for comparison
  lockcluster bench --driver memory
  lockcluster bench --driver sqlite --sqlite-path /tmp/bench.db`

const benchNotes = `One operation = one successful acquire (waiting until the key is granted) then one release.`

// benchResult is what one bench run measured.
type benchResult struct {
	cycles   int
	errors   int
	elapsed  time.Duration
	acquire  []time.Duration
	release  []time.Duration
	firstErr error
}

// benchOptions are bench's flags.
type benchOptions struct {
	driverFlags
	workers, keys         int
	duration, warmup, ttl time.Duration
}

func newBenchCmd(e *env) *cobra.Command {
	var o benchOptions
	cmd := &cobra.Command{
		Use:         "bench [flags]",
		Short:       "measure acquire/release cycles per second on any driver",
		Example:     benchExamples,
		Annotations: map[string]string{annNotes: benchNotes},
		Args:        noArgs,
	}
	fs := cmd.Flags()
	fs.SortFlags = false
	fs.IntVar(&o.workers, "workers", 32, "concurrent workers")
	fs.IntVar(&o.keys, "keys", 0, "number of keys the workers share (0: one key per worker; 1: one hot key)")
	durationVar(fs, &o.duration, "duration", 10*time.Second, "how long to measure (after the warm-up)")
	durationVar(fs, &o.warmup, "warmup", time.Second, "how long to run before measuring")
	durationVar(fs, &o.ttl, "ttl", 10*time.Second, "TTL of every acquisition")
	o.driverFlags.register(cmd, "cluster")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return runBench(cmd.Context(), e, &o)
	}
	return cmd
}

// runBench measures acquire/release cycles per second on any driver.
func runBench(ctx context.Context, e *env, o *benchOptions) error {
	if o.workers <= 0 || o.workers > 4096 || o.keys < 0 || o.duration <= 0 || o.duration > time.Hour || o.warmup < 0 {
		return usagef("need 1 <= --workers <= 4096, --keys >= 0, 0 < --duration <= 1h, --warmup >= 0")
	}
	nkeys := o.keys
	if nkeys == 0 {
		nkeys = o.workers
	}
	cfg := o.config(e)
	m, err := openManager(ctx, cfg)
	if err != nil {
		fmt.Fprintf(e.stderr, "lockcluster bench: %s\n", describeConfig(err))
		return exitStatus(exitCodeFor(err))
	}
	defer m.Close()
	fmt.Fprintf(e.stdout, "driver=%s workers=%d keys=%d duration=%s warmup=%s ttl=%s\n",
		cfg.Driver, o.workers, nkeys, formatDuration(o.duration), formatDuration(o.warmup), formatDuration(o.ttl))
	res := benchRun(ctx, m, o.workers, nkeys, o.warmup, o.duration, o.ttl)
	printBench(e.stdout, res)
	if res.firstErr != nil {
		fmt.Fprintf(e.stderr, "lockcluster bench: first error: %s\n", describe(res.firstErr))
	}
	if res.cycles == 0 {
		return exitStatus(exitFailure)
	}
	return nil
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
