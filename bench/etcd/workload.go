package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// locker is one system under test.
type locker interface {
	// newWorker returns the per-worker handle (etcd: a session).
	newWorker(ctx context.Context) (workerLocker, error)
}

// workerLocker does one worker's cycles.
type workerLocker interface {
	// acquire waits until key is granted and returns its release.
	acquire(ctx context.Context, key string) (release func(context.Context) error, err error)
	close()
}

// scenario is one load shape.
type scenario struct {
	name    string
	workers int
	keyFor  func(worker int) string
}

var scenarios = []scenario{
	{"spread", 32, func(w int) string { return fmt.Sprintf("spread-%d", w) }},
	{"hot", 8, func(int) string { return "hot" }},
	{"serial", 1, func(int) string { return "serial" }},
}

// result is what one scenario measured on one system.
type result struct {
	cycles   int
	errors   int
	elapsed  time.Duration
	acquire  []time.Duration
	release  []time.Duration
	firstErr error
}

func (r result) perSecond() float64 { return float64(r.cycles) / r.elapsed.Seconds() }

// run drives sc on l for warmup+duration and records the cycles that
// started after the warm-up and ended before the end. Every loop is
// bounded by the deadline.
func run(ctx context.Context, l locker, sc scenario, warmup, duration time.Duration) (result, error) {
	ws := make([]workerLocker, sc.workers)
	for i := range ws {
		w, err := l.newWorker(ctx)
		if err != nil {
			for _, w := range ws[:i] {
				w.close()
			}
			return result{}, err
		}
		ws[i] = w
	}
	defer func() {
		for _, w := range ws {
			w.close()
		}
	}()
	start := time.Now()
	from, end := start.Add(warmup), start.Add(warmup+duration)
	ctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()

	var mu sync.Mutex
	var total result
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Go(func() {
			key := sc.keyFor(i)
			var r result
			for ctx.Err() == nil {
				t0 := time.Now()
				release, err := w.acquire(ctx, key)
				t1 := time.Now()
				if err != nil {
					if ctx.Err() == nil {
						r.errors++
						if r.firstErr == nil {
							r.firstErr = err
						}
					}
					continue
				}
				// The last cycle still releases after the deadline.
				rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				err = release(rctx)
				rcancel()
				t2 := time.Now()
				if err != nil {
					r.errors++
					if r.firstErr == nil {
						r.firstErr = err
					}
					continue
				}
				if t0.After(from) && t2.Before(end) {
					r.cycles++
					r.acquire = append(r.acquire, t1.Sub(t0))
					r.release = append(r.release, t2.Sub(t1))
				}
			}
			mu.Lock()
			defer mu.Unlock()
			total.cycles += r.cycles
			total.errors += r.errors
			total.acquire = append(total.acquire, r.acquire...)
			total.release = append(total.release, r.release...)
			if total.firstErr == nil {
				total.firstErr = r.firstErr
			}
		})
	}
	wg.Wait()
	total.elapsed = duration
	slices.Sort(total.acquire)
	slices.Sort(total.release)
	return total, nil
}

// percentile returns the p-th percentile (nearest rank) of sorted ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := int(float64(len(ds))*p/100+0.5) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

func fmtDur(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
	}
}
