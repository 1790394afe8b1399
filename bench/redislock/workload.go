package redislock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// locker is one cycle's two halves, as each library does them.
type locker interface {
	// acquire takes key, waiting for it when wait is set, and returns the
	// function that releases it.
	acquire(ctx context.Context, key string, wait bool) (release func(context.Context) error, err error)
}

// result is what one run measured.
type result struct {
	cycles   int
	elapsed  time.Duration
	acquire  []time.Duration
	handoffs []time.Duration
	cpu      cpuTime // spent by the client process and redis-server
}

func (r result) perSecond() float64 { return float64(r.cycles) / r.elapsed.Seconds() }

// cpuPerCycle is the CPU time, client and server together, of one cycle
// in microseconds.
func (r result) cpuPerCycle() float64 {
	return float64(r.cpu.client+r.cpu.server) / float64(time.Microsecond) / float64(r.cycles)
}

// add merges another slice of the same run into r.
func (r *result) add(o result) {
	r.cycles += o.cycles
	r.elapsed += o.elapsed
	r.acquire = append(r.acquire, o.acquire...)
	r.handoffs = append(r.handoffs, o.handoffs...)
	r.cpu.client += o.cpu.client
	r.cpu.server += o.cpu.server
}

// run makes n cycles with the given number of workers. keyFor names the key
// of a worker; when all workers share one key, hand-off latency is the time
// from the start of a release to the grant that follows it.
func run(ctx context.Context, l locker, workers, n int, keyFor func(worker int) string, wait bool) (result, error) {
	var (
		next        atomic.Int64
		lastRelease atomic.Int64 // UnixNano when the latest release started; 0 = none pending
		mu          sync.Mutex
		res         result
		firstErr    error
		wg          sync.WaitGroup
	)
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := keyFor(w)
			acq := make([]time.Duration, 0, n/workers+1)
			var hand []time.Duration
			for next.Add(1) <= int64(n) {
				t0 := time.Now()
				release, err := l.acquire(ctx, key, wait)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				granted := time.Now()
				acq = append(acq, granted.Sub(t0))
				if wait {
					if rel := lastRelease.Swap(0); rel != 0 {
						hand = append(hand, granted.Sub(time.Unix(0, rel)))
					}
					lastRelease.Store(time.Now().UnixNano())
				}
				if err := release(ctx); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
			}
			mu.Lock()
			res.acquire = append(res.acquire, acq...)
			res.handoffs = append(res.handoffs, hand...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	res.cycles = len(res.acquire)
	return res, firstErr
}

// percentile returns the p-th percentile (0..100) of ds, 0 for none.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}

func token() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
