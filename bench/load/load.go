// Package load is the load loop of the benchmarks: workers run
// acquire/release cycles for a warm-up and a measured time, and the
// cycles that fall wholly in the measured time are counted and timed.
//
// It serves "lockcluster bench" and the comparisons under bench/ (which
// are modules of their own and import it through a replace directive).
package load

import (
	"context"
	"slices"
	"sync"
	"time"
)

// DefaultReleaseTimeout bounds a release when Options.ReleaseTimeout is
// zero.
const DefaultReleaseTimeout = 10 * time.Second

// Acquire is one worker's first half of a cycle: it takes the worker's
// key, waiting until it is granted (ctx ends at the end of the run), and
// returns the function that releases it.
type Acquire func(ctx context.Context, worker int) (release func(context.Context) error, err error)

// Options shape a run.
type Options struct {
	// Workers is the number of concurrent workers, numbered from 0.
	Workers int
	// Warmup is how long the workers run before the measured time;
	// Duration is the measured time.
	Warmup, Duration time.Duration
	// ReleaseTimeout bounds each release, which runs on a context of its
	// own so that the last cycle still frees its key after the end; zero
	// is DefaultReleaseTimeout.
	ReleaseTimeout time.Duration
	// Ignore, if set, tells the acquire errors that are no failure (such as
	// "not granted before the end") from those that are counted in Errors.
	// Errors once the run's end has passed are never counted.
	Ignore func(error) bool
	// Begin, if set, runs when the measured time starts (the end of the
	// warm-up), and End when it ends (or the caller's ctx ends the run),
	// while the workers go on: a caller reads counters there, such as
	// CPU time, so that they cover the measured time. Run returns after
	// both have returned; End runs only if Begin ran.
	Begin, End func()
}

// Result is what a run measured.
type Result struct {
	// Cycles is the number of cycles that started after the warm-up and
	// ended before the end.
	Cycles int
	// Errors is the number of failed acquires and releases, over the
	// whole run (warm-up included); FirstErr is one of them.
	Errors   int
	FirstErr error
	// Elapsed is the measured time: Duration, or less if the caller's ctx
	// ended the run early.
	Elapsed time.Duration
	// Acquire and Release are the latencies of the counted cycles'
	// halves, sorted.
	Acquire, Release []time.Duration
}

// PerSecond is the rate of counted cycles over the measured time.
func (r Result) PerSecond() float64 { return float64(r.Cycles) / r.Elapsed.Seconds() }

// Run runs o.Workers workers for o.Warmup+o.Duration, each repeating
// acquire then release until the end, and measures the cycles that fall
// wholly in the measured time. It returns when every worker has finished
// its last cycle.
func Run(ctx context.Context, o Options, acquire Acquire) Result {
	relTimeout := o.ReleaseTimeout
	if relTimeout == 0 {
		relTimeout = DefaultReleaseTimeout
	}
	start := time.Now()
	from := start.Add(o.Warmup)
	end := from.Add(o.Duration)
	ctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()

	var mu sync.Mutex
	var total Result
	var wg sync.WaitGroup
	if o.Begin != nil || o.End != nil {
		wg.Go(func() { marks(ctx, from, o.Begin, o.End) })
	}
	for w := range o.Workers {
		wg.Go(func() {
			var r Result
			fail := func(err error) {
				r.Errors++
				if r.FirstErr == nil {
					r.FirstErr = err
				}
			}
			for ctx.Err() == nil && time.Now().Before(end) {
				t0 := time.Now()
				release, err := acquire(ctx, w)
				t1 := time.Now()
				if err != nil {
					// The run's end, passed or not yet seen by ctx, cuts
					// the last acquire short: that is no failure.
					if ctx.Err() == nil && time.Now().Before(end) && (o.Ignore == nil || !o.Ignore(err)) {
						fail(err)
					}
					continue
				}
				rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), relTimeout)
				err = release(rctx)
				rcancel()
				t2 := time.Now()
				if err != nil {
					fail(err)
					continue
				}
				if t0.After(from) && t2.Before(end) {
					r.Cycles++
					r.Acquire = append(r.Acquire, t1.Sub(t0))
					r.Release = append(r.Release, t2.Sub(t1))
				}
			}
			mu.Lock()
			defer mu.Unlock()
			total.Cycles += r.Cycles
			total.Errors += r.Errors
			total.Acquire = append(total.Acquire, r.Acquire...)
			total.Release = append(total.Release, r.Release...)
			if total.FirstErr == nil {
				total.FirstErr = r.FirstErr
			}
		})
	}
	wg.Wait()
	total.Elapsed = o.Duration
	if now := time.Now(); now.Before(end) { // cut short by the caller
		total.Elapsed = max(now.Sub(from), time.Millisecond)
	}
	slices.Sort(total.Acquire)
	slices.Sort(total.Release)
	return total
}

// marks calls begin at from and end when ctx ends (at the end of the
// measured time, or earlier when the caller cancels), skipping both if ctx
// ends before from.
func marks(ctx context.Context, from time.Time, begin, end func()) {
	t := time.NewTimer(time.Until(from))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return
	case <-t.C:
	}
	if begin != nil {
		begin()
	}
	<-ctx.Done()
	if end != nil {
		end()
	}
}

// Percentile returns the p-th percentile (0 to 100, nearest rank) of ds,
// or 0 if ds is empty. It sorts ds in place unless it is sorted already
// (Result's latencies are).
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	if !slices.IsSorted(ds) {
		slices.Sort(ds)
	}
	i := int(float64(len(ds))*p/100+0.5) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}
