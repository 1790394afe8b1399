package manager

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers"
)

// BenchShared measures, side by side in one run, the cycle of a
// semaphore and of a read lock against the mutex cycle on d's backend,
// through the public API as an application calls it (Manager.Block with a
// callback that does nothing, default options), in rounds that interleave
// the rows so that load from elsewhere on the machine hits all of them:
//
//	mutex-16     16 workers on one mutex
//	sem4-16      16 workers on one semaphore of 4
//	mutex-8      8 workers on one mutex
//	read-8       8 readers of one read/write lock
//	read-8+w1    8 readers and 1 writer of one read/write lock (readers' cycles)
//
// It reports each row's cycles/s and the ratios the targets are stated in:
// sem-cost (mutex-16's rate over sem4-16's: a semaphore cycle costs at most
// 1.2× a mutex cycle), read-cost (mutex-8's rate over read-8+w1's readers'),
// and readers/mutex (read-8's rate over mutex-8's: readers share, so they
// should not queue). d is closed at the end.
func BenchShared(b *testing.B, d drivers.Driver, round time.Duration) {
	m := lock.New(d)
	defer m.Close()
	ctx := context.Background()
	prefix := "bench-shared-" + rand.Text()[:8] + "/"
	rows := []*sharedRow{
		{name: "mutex-16", workers: 16, key: prefix + "mutex16"},
		{name: "sem4-16", workers: 16, key: prefix + "sem", opt: lock.Semaphore(4)},
		{name: "mutex-8", workers: 8, key: prefix + "mutex8"},
		{name: "read-8", workers: 8, key: prefix + "read", opt: lock.Read()},
		{name: "read-8+w1", workers: 8, key: prefix + "rw", opt: lock.Read(), writer: true},
	}
	for _, r := range rows { // warm up: connections, scripts, statements
		if err := r.run(ctx, m, round/10); err != nil {
			b.Fatal(err)
		}
		r.ops, r.wall = 0, 0
	}
	rounds := max(b.N, 1)
	b.ResetTimer()
	for range rounds {
		for _, r := range rows {
			if err := r.run(ctx, m, round); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	rate := map[string]float64{}
	for _, r := range rows {
		rate[r.name] = float64(r.ops) / r.wall.Seconds()
		b.ReportMetric(rate[r.name], r.name+"-cycles/s")
	}
	b.ReportMetric(rate["mutex-16"]/rate["sem4-16"], "sem-cost")
	b.ReportMetric(rate["mutex-8"]/rate["read-8+w1"], "read-cost")
	b.ReportMetric(rate["read-8"]/rate["mutex-8"], "readers/mutex")
}

// sharedRow is one row of BenchShared.
type sharedRow struct {
	name    string
	workers int
	key     string
	opt     lock.Option
	writer  bool // one more worker takes the write side meanwhile
	ops     int
	wall    time.Duration
}

// run has the row's workers cycle for d; it adds their cycles and the
// time taken.
func (r *sharedRow) run(ctx context.Context, m *lock.Manager, d time.Duration) error {
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	errs := make(chan error, r.workers+1)
	counts := make([]int, r.workers)
	cycle := func(opt lock.Option) error {
		return m.Block(ctx, r.key, 10*time.Second, func(context.Context, *lock.Lock) error { return nil },
			opt, lock.WithTimeout(30*time.Second))
	}
	start := time.Now()
	for w := range r.workers {
		wg.Go(func() {
			for time.Now().Before(stop) {
				if err := cycle(r.opt); err != nil {
					errs <- fmt.Errorf("%s: %w", r.name, err)
					return
				}
				counts[w]++
			}
		})
	}
	if r.writer {
		wg.Go(func() {
			for time.Now().Before(stop) {
				if err := cycle(lock.Write()); err != nil {
					errs <- fmt.Errorf("%s writer: %w", r.name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	r.wall += time.Since(start)
	for _, n := range counts {
		r.ops += n
	}
	close(errs)
	return <-errs
}
