package main

import (
	"context"
	"fmt"
	"time"

	"github.com/zerotal/lock/bench/load"
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

// run drives sc on l for warmup+duration and records the cycles that
// started after the warm-up and ended before the end (load.Run). Every
// loop is bounded by the deadline.
func run(ctx context.Context, l locker, sc scenario, warmup, duration time.Duration) (load.Result, error) {
	ws := make([]workerLocker, sc.workers)
	for i := range ws {
		w, err := l.newWorker(ctx)
		if err != nil {
			for _, w := range ws[:i] {
				w.close()
			}
			return load.Result{}, err
		}
		ws[i] = w
	}
	defer func() {
		for _, w := range ws {
			w.close()
		}
	}()
	o := load.Options{Workers: sc.workers, Warmup: warmup, Duration: duration}
	return load.Run(ctx, o, func(ctx context.Context, i int) (func(context.Context) error, error) {
		return ws[i].acquire(ctx, sc.keyFor(i))
	}), nil
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
