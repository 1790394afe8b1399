package load

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestRun_CountsCyclesInTheMeasuredTimeOnly(t *testing.T) {
	var mu sync.Mutex // one key for every worker
	var acquires, releases atomic.Int64
	r := Run(t.Context(), Options{Workers: 4, Warmup: 50 * time.Millisecond, Duration: 200 * time.Millisecond},
		func(ctx context.Context, worker int) (func(context.Context) error, error) {
			if worker < 0 || worker >= 4 {
				t.Errorf("worker %d out of range", worker)
			}
			mu.Lock()
			acquires.Add(1)
			return func(context.Context) error { releases.Add(1); mu.Unlock(); return nil }, nil
		})
	if r.Cycles == 0 || r.Errors != 0 || r.FirstErr != nil {
		t.Fatalf("cycles %d, errors %d (%v); want cycles and no errors", r.Cycles, r.Errors, r.FirstErr)
	}
	if int64(r.Cycles) >= acquires.Load() {
		t.Fatalf("%d cycles counted of %d made: the warm-up's must not count", r.Cycles, acquires.Load())
	}
	if acquires.Load() != releases.Load() {
		t.Fatalf("%d acquires but %d releases: the last cycle must release too", acquires.Load(), releases.Load())
	}
	if len(r.Acquire) != r.Cycles || len(r.Release) != r.Cycles {
		t.Fatalf("%d cycles but %d acquire and %d release latencies", r.Cycles, len(r.Acquire), len(r.Release))
	}
	for i := 1; i < len(r.Acquire); i++ {
		if r.Acquire[i] < r.Acquire[i-1] || r.Release[i] < r.Release[i-1] {
			t.Fatal("latencies are not sorted")
		}
	}
	if r.Elapsed != 200*time.Millisecond || r.PerSecond() != float64(r.Cycles)/0.2 {
		t.Fatalf("elapsed %v, %v/s for %d cycles", r.Elapsed, r.PerSecond(), r.Cycles)
	}
}

func TestRun_CountsErrorsButNotIgnoredOnes(t *testing.T) {
	errBad, errBenign := errors.New("bad"), errors.New("benign")
	var n atomic.Int64
	r := Run(t.Context(), Options{Workers: 1, Duration: 50 * time.Millisecond, Ignore: func(err error) bool { return err == errBenign }},
		func(ctx context.Context, _ int) (func(context.Context) error, error) {
			switch n.Add(1) {
			case 1:
				return nil, errBenign
			case 2:
				return nil, errBad
			case 3:
				return func(context.Context) error { return errBad }, nil
			}
			<-ctx.Done()
			return nil, ctx.Err() // at the end: not counted
		})
	if r.Errors != 2 || r.FirstErr != errBad || r.Cycles != 0 {
		t.Fatalf("errors %d, first %v, cycles %d; want 2, bad, 0", r.Errors, r.FirstErr, r.Cycles)
	}
}

func TestRun_CutShortByTheCaller(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	r := Run(ctx, Options{Workers: 2, Duration: time.Hour},
		func(ctx context.Context, _ int) (func(context.Context) error, error) {
			return func(context.Context) error { return nil }, nil
		})
	if r.Elapsed >= time.Hour || r.Elapsed <= 0 {
		t.Fatalf("elapsed %v after a run cut short", r.Elapsed)
	}
}

func TestPercentile_NearestRank(t *testing.T) {
	ds := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 5}, {99, 10}, {0, 1}, {100, 10}, {10, 1}, {11, 1}, {15, 2}} {
		if got := Percentile(ds, c.p); got != c.want {
			t.Errorf("Percentile(1..10, %v) = %v, want %v", c.p, got, c.want)
		}
	}
	if got := Percentile(nil, 50); got != 0 {
		t.Errorf("Percentile(nil) = %v, want 0", got)
	}
}

func TestPercentile_SortsUnsortedInput(t *testing.T) {
	ds := []int{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	var durs []time.Duration
	for _, d := range ds {
		durs = append(durs, time.Duration(d))
	}
	if got := Percentile(durs, 50); got != 5 {
		t.Fatalf("p50 = %d, want 5", got)
	}
	if got := Percentile(durs, 99); got != 10 {
		t.Fatalf("p99 = %d, want 10", got)
	}
	if got := Percentile(nil, 50); got != 0 {
		t.Fatalf("p50 of nothing = %d", got)
	}
}

func TestRun_BeginAndEndMarkTheMeasuredTime(t *testing.T) {
	const warmup, duration = 50 * time.Millisecond, 150 * time.Millisecond
	var begins, ends atomic.Int64
	var begun, ended time.Time
	start := time.Now()
	r := Run(t.Context(), Options{Workers: 2, Warmup: warmup, Duration: duration,
		Begin: func() { begins.Add(1); begun = time.Now() },
		End:   func() { ends.Add(1); ended = time.Now() }},
		func(context.Context, int) (func(context.Context) error, error) {
			return func(context.Context) error { return nil }, nil
		})
	if begins.Load() != 1 || ends.Load() != 1 {
		t.Fatalf("Begin ran %d times and End %d times; want once each, before Run returns", begins.Load(), ends.Load())
	}
	if begun.Before(start.Add(warmup)) || ended.Before(start.Add(warmup+duration)) {
		t.Fatalf("Begin at +%s and End at +%s; want after +%s and +%s", begun.Sub(start), ended.Sub(start), warmup, warmup+duration)
	}
	if r.Cycles == 0 {
		t.Fatal("no cycles")
	}
}

func TestRun_CancelledInTheWarmupSkipsBeginAndEnd(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var marks atomic.Int64
	Run(ctx, Options{Workers: 1, Warmup: time.Hour, Duration: time.Hour,
		Begin: func() { marks.Add(1) }, End: func() { marks.Add(1) }},
		func(context.Context, int) (func(context.Context) error, error) {
			cancel()
			return func(context.Context) error { return nil }, nil
		})
	if marks.Load() != 0 {
		t.Fatalf("Begin/End ran %d times in a run cancelled before the measured time", marks.Load())
	}
}
