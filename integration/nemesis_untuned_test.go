package integration

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/drivers/driverstest"
)

// What a user with the default client settings sees during each fault.
// The workload's own clients are tuned (a short Timeout); these use
// client.Config with nothing but the addresses, and give each call 2s,
// as an application with a per-request deadline would. Their throughput
// while a fault lasts, beside their throughput outside every fault, goes
// into the report; nothing fails on it.

// untunedClients is how many default-config clients run beside the
// workload.
const untunedClients = 4

// untunedDeadline bounds each of their calls.
const untunedDeadline = 2 * time.Second

// untunedLoad records when the untuned clients' calls succeeded.
type untunedLoad struct {
	h    *history
	done chan struct{} // closed once every untuned client has stopped

	mu    sync.Mutex
	start time.Duration   // when the clients started
	oks   []time.Duration // end of each successful call, history clock
}

// runUntuned runs the untuned clients until ctx ends; each takes and
// releases a key of its own, over and over.
func runUntuned(ctx context.Context, addrs []string, h *history) (*untunedLoad, error) {
	u := &untunedLoad{h: h, start: h.now(), done: make(chan struct{})}
	clients := make([]*client.Client, untunedClients)
	for i := range clients {
		cl, err := client.New(client.Config{Addrs: addrs, Token: clientToken})
		if err != nil {
			for _, c := range clients[:i] {
				_ = c.Close()
			}
			return nil, err
		}
		clients[i] = cl
	}
	var wg sync.WaitGroup
	for i, cl := range clients {
		wg.Go(func() {
			defer func() { _ = cl.Close() }()
			key, owner := fmt.Sprintf("untuned/c%d", i), fmt.Sprintf("untuned-c%d", i)
			for ctx.Err() == nil {
				u.call(func(cctx context.Context) bool {
					_, ok, err := driverstest.Take(cctx, cl, key, owner, 5*time.Second)
					return err == nil && ok
				})
				u.call(func(cctx context.Context) bool {
					_, err := cl.Release(cctx, key, owner)
					return err == nil
				})
				sleepCtx(ctx, 10*time.Millisecond) // a paced application
			}
		})
	}
	go func() {
		<-ctx.Done()
		wg.Wait()
		close(u.done)
	}()
	return u, nil
}

// call runs fn with the per-call deadline and records a success.
func (u *untunedLoad) call(fn func(context.Context) bool) {
	ctx, cancel := context.WithTimeout(context.Background(), untunedDeadline)
	defer cancel()
	if fn(ctx) {
		end := u.h.now()
		u.mu.Lock()
		u.oks = append(u.oks, end)
		u.mu.Unlock()
	}
}

// untunedStats is the untuned clients' throughput per fault kind.
type untunedStats struct {
	// Baseline is successful calls per second outside every fault.
	Baseline float64 `json:"baseline_ops_per_s"`
	// During is, per kind, successful calls per second while faults of
	// that kind lasted (injection to heal); Ratio is During/Baseline.
	During map[faultKind]float64 `json:"during_ops_per_s"`
	Ratio  map[faultKind]float64 `json:"ratio"`
	// FirstOK is, per kind, the time from the injection to the first
	// successful call that ended after it.
	FirstOK map[faultKind]recoveryMS `json:"first_ok_ms"`
}

// stats measures the untuned clients' throughput against the faults,
// up to end; it waits for the clients to stop.
func (u *untunedLoad) stats(faults []faultRecord, end time.Duration) untunedStats {
	<-u.done
	u.mu.Lock()
	oks := slices.Clone(u.oks)
	u.mu.Unlock()
	slices.Sort(oks)
	count := func(from, to time.Duration) int {
		lo, _ := slices.BinarySearch(oks, from)
		hi, _ := slices.BinarySearch(oks, to)
		return hi - lo
	}
	s := untunedStats{During: map[faultKind]float64{}, Ratio: map[faultKind]float64{}, FirstOK: map[faultKind]recoveryMS{}}
	inFaults, faultTime := 0, time.Duration(0)
	okN := map[faultKind]int{}
	kindTime := map[faultKind]time.Duration{}
	firsts := map[faultKind][]time.Duration{}
	for _, f := range faults {
		n := count(f.start, f.end)
		okN[f.kind] += n
		kindTime[f.kind] += f.end - f.start
		inFaults += n
		faultTime += f.end - f.start
		if i, _ := slices.BinarySearch(oks, f.start); i < len(oks) {
			firsts[f.kind] = append(firsts[f.kind], oks[i]-f.start)
		}
	}
	if quiet := end - u.start - faultTime; quiet > 0 {
		s.Baseline = float64(count(u.start, end)-inFaults) / quiet.Seconds()
	}
	for k, d := range kindTime {
		if d <= 0 {
			continue
		}
		s.During[k] = float64(okN[k]) / d.Seconds()
		if s.Baseline > 0 {
			s.Ratio[k] = s.During[k] / s.Baseline
		}
	}
	for k, ds := range firsts {
		s.FirstOK[k] = summarize(ds)
	}
	return s
}
