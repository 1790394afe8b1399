package manager

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers"
)

// BenchHeld measures how d's backend does as the locks it holds grow: at
// each size in sizes (held locks, ascending) it fills the backend to that
// size, then runs 16 workers cycling fresh keys through the public API
// (Manager.Make, Lock.Block, Lock.Release) for window, and reports the
// rate as a ratio to the rate at the first size, the acquire p99, and
// what each held lock costs: (mem() after - mem() before the first fill)
// / held. mem is the backend's own measure (Redis used_memory, the SQLite
// file, the process heap), named by unit. d is closed at the end.
//
// `make bench-scale` runs it on every driver.
func BenchHeld(b *testing.B, d drivers.Driver, sizes []int, window time.Duration, unit string, mem func() int64) {
	m := lock.New(d)
	defer m.Close()
	ctx := context.Background()
	prefix := "bench-held-" + rand.Text()[:8] + "/"
	base := mem()
	held := 0
	var first float64
	for _, n := range sizes {
		t0 := time.Now()
		if err := fillHeld(ctx, d, prefix, held, n); err != nil {
			b.Fatal(err)
		}
		fillRate := float64(n-held) / time.Since(t0).Seconds()
		held = n
		used := mem()
		rate, p99, err := cycleFresh(ctx, m, prefix, 16, window)
		if err != nil {
			b.Fatal(err)
		}
		if first == 0 {
			first = rate
		}
		perLock := float64(used-base) / float64(n)
		b.Logf("held %8d: filled at %6.0f/s; %6.0f cycles/s (%.2fx of the first), acquire p99 %v; %s per held lock: %.0f B",
			n, fillRate, rate, rate/first, p99.Round(time.Microsecond), unit, perLock)
		b.ReportMetric(rate/first, fmt.Sprintf("rate@%d/first", n))
		b.ReportMetric(perLock, fmt.Sprintf("B/lock@%d", n))
	}
}

// fillHeld holds prefix+i for i in from..to-1 for an hour, 64 calls at a
// time, straight through the driver.
func fillHeld(ctx context.Context, d drivers.Driver, prefix string, from, to int) error {
	var next atomic.Int64
	next.Store(int64(from))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= to {
					return
				}
				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				g, err := d.Acquire(cctx, drivers.Request{Keys: []string{prefix + "held-" + strconv.Itoa(i)}, Owner: "held-owner-0123456789abcdef01234", TTL: time.Hour})
				cancel()
				if err == nil && !g.Acquired {
					err = fmt.Errorf("held-%d not granted", i)
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					next.Store(int64(to))
					return
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// cycleFresh runs workers goroutines, each taking and releasing fresh
// keys as an application does, for d; it returns the rate and the
// acquire p99.
func cycleFresh(ctx context.Context, m *lock.Manager, prefix string, workers int, d time.Duration) (float64, time.Duration, error) {
	var wg sync.WaitGroup
	lat := make([][]time.Duration, workers)
	errs := make([]error, workers)
	end := time.Now().Add(d)
	start := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(end); i++ {
				t0 := time.Now()
				l := m.Make(prefix+"cycle-"+strconv.Itoa(w)+"-"+strconv.Itoa(i), time.Minute)
				if err := l.Block(ctx, 5*time.Second); err != nil {
					errs[w] = err
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
				rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				err := l.Release(rctx)
				cancel()
				if err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return 0, 0, err
		}
	}
	all := slices.Concat(lat...)
	if len(all) == 0 {
		return 0, 0, fmt.Errorf("no cycle completed in %v", d)
	}
	slices.Sort(all)
	return float64(len(all)) / time.Since(start).Seconds(), all[len(all)*99/100], nil
}
