package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/bench/load"
)

const benchExamples = `  # 32 workers on distinct keys against a running cluster, 10 s
  lockcluster bench --driver cluster --endpoints 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003

  # 8 workers contending for one key (each waits until it gets it)
  lockcluster bench --workers 8 --keys 1

  # the same load on the in-process engine and on a SQLite file, for comparison
  lockcluster bench --driver memory
  lockcluster bench --driver sqlite --sqlite-path /tmp/bench.db`

const benchNotes = `One operation = one successful acquire (waiting until the key is granted) then one release.

cpu/cycle is the CPU time (user + system) used over the measured time per cycle:
this process's own, and on the cluster driver each endpoint's, read from its /metrics
(process_cpu_seconds_total, with --token) before and after. An endpoint that cannot be
read is shown as "not read" and left out of the total. Other drivers show the client only.`

// benchOptions are bench's flags.
type benchOptions struct {
	driverFlags
	workers, keys         int
	duration, warmup, ttl time.Duration
}

func newBenchCmd(e *env) *cobra.Command {
	var o benchOptions
	cmd, fs := newCommand("bench [flags]", "measure acquire/release cycles per second on any driver", benchExamples, benchNotes)
	fs.IntVar(&o.workers, "workers", 32, "concurrent workers")
	fs.IntVar(&o.keys, "keys", 0, "number of keys the workers share (0: one key per worker; 1: one hot key)")
	durationVar(fs, &o.duration, "duration", 10*time.Second, "how long to measure (after the warm-up)")
	durationVar(fs, &o.warmup, "warmup", time.Second, "how long to run before measuring")
	durationVar(fs, &o.ttl, "ttl", 10*time.Second, "TTL of every acquisition")
	o.driverFlags.register(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return runBench(cmd.Context(), e, cmd, &o)
	}
	return cmd
}

// runBench measures acquire/release cycles per second on any driver.
func runBench(ctx context.Context, e *env, cmd *cobra.Command, o *benchOptions) error {
	if o.workers <= 0 || o.workers > 4096 || o.keys < 0 || o.duration <= 0 || o.duration > time.Hour || o.warmup < 0 {
		return usagef("need 1 <= --workers <= 4096, --keys >= 0, 0 < --duration <= 1h, --warmup >= 0")
	}
	nkeys := o.keys
	if nkeys == 0 {
		nkeys = o.workers
	}
	cfg := o.config(e)
	m, err := openOrExplain(ctx, e, cmd, cfg)
	if err != nil {
		return err
	}
	defer m.Close()
	fmt.Fprintf(e.stdout, "driver=%s workers=%d keys=%d duration=%s warmup=%s ttl=%s\n",
		cmp.Or(cfg.Driver, lock.DefaultDriver), o.workers, nkeys, formatDuration(o.duration), formatDuration(o.warmup), formatDuration(o.ttl))
	mr, _ := m.Driver().(metricsReader)
	meter := newCPUMeter(cfg.Driver, cfg.Cluster.Addrs, mr)
	res := benchRun(ctx, m, o.workers, nkeys, o.warmup, o.duration, o.ttl, meter)
	cpuRes := meter.result()
	printBench(e.stdout, res, cpuRes)
	for _, f := range cpuRes.Figures {
		if f.err != nil {
			fmt.Fprintf(e.stderr, "lockcluster bench: CPU time of %s not read: %s\n", f.name, describe(f.err))
		}
	}
	if res.FirstErr != nil {
		fmt.Fprintf(e.stderr, "lockcluster bench: first error: %s\n", describe(res.FirstErr))
	}
	if res.Cycles == 0 {
		return exitStatus(exitFailure)
	}
	return nil
}

// benchRun runs workers for warmup+duration, each on key bench:<worker
// mod nkeys>, and records the cycles that started after the warm-up; meter
// reads CPU time at both edges of the measured time.
func benchRun(ctx context.Context, m *lock.Manager, workers, nkeys int, warmup, duration, ttl time.Duration, meter *cpuMeter) load.Result {
	keys := make([]string, workers)
	for w := range keys {
		keys[w] = fmt.Sprintf("bench:%d", w%nkeys)
	}
	o := load.Options{Workers: workers, Warmup: warmup, Duration: duration,
		Ignore: func(err error) bool { return errors.Is(err, lock.ErrNotAcquired) },
		Begin:  meter.begin, End: meter.end}
	return load.Run(ctx, o, func(ctx context.Context, w int) (func(context.Context) error, error) {
		l := m.Make(keys[w], ttl)
		end, _ := ctx.Deadline()
		left := time.Until(end)
		if left <= 0 {
			// The run is over, though ctx may not say so yet: a Block
			// with no time left would be asked for a bad timeout.
			return nil, context.DeadlineExceeded
		}
		if err := l.Block(ctx, left); err != nil {
			return nil, err
		}
		return l.Release, nil
	})
}

func printBench(w io.Writer, r load.Result, c cpuResult) {
	fmt.Fprintf(w, "cycles    %d in %s = %.1f/s\n", r.Cycles, r.Elapsed.Round(time.Millisecond), r.PerSecond())
	printCPU(w, c, r.Cycles)
	fmt.Fprintf(w, "acquire   p50 %s  p99 %s\n", fmtDur(load.Percentile(r.Acquire, 50)), fmtDur(load.Percentile(r.Acquire, 99)))
	fmt.Fprintf(w, "release   p50 %s  p99 %s\n", fmtDur(load.Percentile(r.Release, 50)), fmtDur(load.Percentile(r.Release, 99)))
	fmt.Fprintf(w, "errors    %d\n", r.Errors)
	if r.FirstErr != nil {
		fmt.Fprintf(w, "first error: %s\n", describe(r.FirstErr))
	}
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
