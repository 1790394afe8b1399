package lock

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestRegistry_AddRemoveDrain(t *testing.T) {
	t.Parallel()
	var g registry
	var closed atomic.Bool
	rng := rand.New(rand.NewPCG(1, 2))
	live := map[*run]bool{}
	var order []*run
	// More runs than slots at times, so that the overflow map is used too.
	for step := range 6000 {
		if len(order) < 1500 && (len(order) == 0 || rng.IntN(3) > 0) {
			r := &run{}
			if !g.add(r, &closed) {
				t.Fatal("add refused while open")
			}
			live[r] = true
			order = append(order, r)
		} else {
			i := rng.IntN(len(order))
			g.remove(order[i])
			delete(live, order[i])
			order = slices.Delete(order, i, i+1)
		}
		if step%500 == 0 {
			checkDrainable(t, &g, live)
		}
	}
	closed.Store(true)
	checkDrainable(t, &g, live)
	if g.add(&run{}, &closed) {
		t.Fatal("add accepted after close")
	}
	checkDrainable(t, &g, live)
}

// checkDrainable checks that drain would return exactly the live runs.
func checkDrainable(t *testing.T, g *registry, live map[*run]bool) {
	t.Helper()
	got := g.drain()
	if len(got) != len(live) {
		t.Fatalf("drain returned %d runs, want %d", len(got), len(live))
	}
	for _, r := range got {
		if !live[r] {
			t.Fatal("drain returned a run that was removed")
		}
	}
}

// Close racing with registrations: every run is either refused or drained.
func TestRegistry_CloseRacingAddsMissesNothing(t *testing.T) {
	t.Parallel()
	for range 50 {
		var g registry
		var closed atomic.Bool
		var accepted sync.Map
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 50 {
					r := &run{}
					if g.add(r, &closed) {
						accepted.Store(r, true)
					}
				}
			}()
		}
		closed.Store(true)
		drained := map[*run]bool{}
		for _, r := range g.drain() {
			drained[r] = true
		}
		wg.Wait()
		accepted.Range(func(k, _ any) bool {
			r := k.(*run)
			if !drained[r] {
				// Accepted after the drain: only possible if it saw the
				// registry open after close was set, which must not happen.
				t.Error("a run was accepted but not drained")
			}
			return true
		})
	}
}

// heldRun builds a registered-to-be run for a handle that holds its lock
// until expiresAt.
func heldRun(m *Manager, expiresAt time.Time) (*run, context.Context) {
	ctx, cancel := context.WithCancelCause(context.Background())
	l := &Lock{m: m, key: "k", owner: "o", held: true, expiresAt: expiresAt}
	r := &run{}
	r.init(l, "o", 1, cancel, &options{})
	r.watch(context.Background(), expiresAt)
	return r, ctx
}

func TestExpiryWatch_EarlierDeadlineRearmsTheTimer(t *testing.T) {
	t.Parallel()
	m := New(&nopDriver{})
	defer m.Close()
	late, lateCtx := heldRun(m, time.Now().Add(time.Hour))
	if !m.runs.add(late, &m.closed) {
		t.Fatal("add refused")
	}
	soon, soonCtx := heldRun(m, time.Now().Add(20*time.Millisecond))
	if !m.runs.add(soon, &m.closed) {
		t.Fatal("add refused")
	}
	select {
	case <-soonCtx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the earlier deadline was not watched: the timer still waits for the later one")
	}
	if !errors.Is(context.Cause(soonCtx), ErrLostExpired) {
		t.Fatalf("cause %v, want ErrLostExpired", context.Cause(soonCtx))
	}
	if lateCtx.Err() != nil {
		t.Fatal("the later run was cancelled too")
	}
	if next := m.runs.next.Load(); next != late.deadline.Load() {
		t.Errorf("timer re-armed for %d, want the later run's deadline %d", next, late.deadline.Load())
	}
	m.runs.remove(late)
	m.runs.remove(soon)
}

// Runs registering while scans are under way: none is missed.
func TestExpiryWatch_NoDeadlineMissedUnderChurn(t *testing.T) {
	t.Parallel()
	m := New(&nopDriver{})
	defer m.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 300
	ctxs := make([]context.Context, n)
	runs := make([]*run, n)
	for i := range n {
		runs[i], ctxs[i] = heldRun(m, time.Now().Add(time.Duration(1+rng.IntN(40))*time.Millisecond))
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !m.runs.add(runs[i], &m.closed) {
				t.Error("add refused")
			}
		}()
	}
	wg.Wait()
	deadline := time.After(10 * time.Second)
	for i, ctx := range ctxs {
		select {
		case <-ctx.Done():
		case <-deadline:
			t.Fatalf("run %d was never told its TTL ran out", i)
		}
	}
	for _, r := range runs {
		m.runs.remove(r)
	}
}

// nopDriver answers everything and holds nothing.
type nopDriver struct{}

func (*nopDriver) Acquire(context.Context, string, string, time.Duration) (uint64, bool, error) {
	return 1, true, nil
}
func (*nopDriver) Release(context.Context, string, string) (bool, error) { return true, nil }
func (*nopDriver) ForceRelease(context.Context, string) error            { return nil }
func (*nopDriver) Exists(context.Context, string) (bool, error)          { return false, nil }
func (*nopDriver) Close() error                                          { return nil }
