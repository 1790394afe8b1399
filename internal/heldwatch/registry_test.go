package heldwatch

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
)

func TestRegistry_AddRemoveDrain(t *testing.T) {
	t.Parallel()
	var g Registry
	var closed atomic.Bool
	rng := rand.New(rand.NewPCG(1, 2))
	live := map[*Watch]bool{}
	var order []*Watch
	// More watches than slots at times, so that the overflow map is used too.
	for step := range 6000 {
		if len(order) < 1500 && (len(order) == 0 || rng.IntN(3) > 0) {
			r := &Watch{}
			if !g.Add(r, &closed) {
				t.Fatal("add refused while open")
			}
			live[r] = true
			order = append(order, r)
		} else {
			i := rng.IntN(len(order))
			g.Remove(order[i])
			delete(live, order[i])
			order = slices.Delete(order, i, i+1)
		}
		if step%500 == 0 {
			checkDrainable(t, &g, live)
		}
	}
	closed.Store(true)
	checkDrainable(t, &g, live)
	if g.Add(&Watch{}, &closed) {
		t.Fatal("add accepted after close")
	}
	checkDrainable(t, &g, live)
}

// checkDrainable checks that drain would return exactly the live watches.
func checkDrainable(t *testing.T, g *Registry, live map[*Watch]bool) {
	t.Helper()
	got := g.Drain()
	if len(got) != len(live) {
		t.Fatalf("drain returned %d watches, want %d", len(got), len(live))
	}
	for _, r := range got {
		if !live[r] {
			t.Fatal("drain returned a watch that was removed")
		}
	}
}

// Close racing with registrations: every watch is either refused or drained.
func TestRegistry_CloseRacingAddsMissesNothing(t *testing.T) {
	t.Parallel()
	for range 50 {
		var g Registry
		var closed atomic.Bool
		var accepted sync.Map
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 50 {
					r := &Watch{}
					if g.Add(r, &closed) {
						accepted.Store(r, true)
					}
				}
			}()
		}
		closed.Store(true)
		drained := map[*Watch]bool{}
		for _, r := range g.Drain() {
			drained[r] = true
		}
		wg.Wait()
		accepted.Range(func(k, _ any) bool {
			r := k.(*Watch)
			if !drained[r] {
				// Accepted after the drain: only possible if it saw the
				// registry open after close was set, which must not happen.
				t.Error("a watch was accepted but not drained")
			}
			return true
		})
	}
}

// heldGrant is a grant held until a fixed time, never refreshed.
type heldGrant struct{ expiresAt time.Time }

func (g *heldGrant) State() (State, time.Time)                     { return Held, g.expiresAt }
func (g *heldGrant) Refresh(context.Context, func()) (bool, error) { return true, nil }
func (g *heldGrant) Lost(*drivers.LostError)                       {}
func (g *heldGrant) RefreshFailed(error)                           {}

// heldWatch builds a registered-to-be watch of a grant held until
// expiresAt.
func heldWatch(expiresAt time.Time) (*Watch, context.Context) {
	ctx, cancel := context.WithCancelCause(context.Background())
	w := &Watch{}
	w.Init(&heldGrant{expiresAt: expiresAt}, "k", 1, cancel, Options{})
	w.Arm(context.Background(), expiresAt)
	return w, ctx
}

func TestExpiryTimer_EarlierDeadlineRearmsTheTimer(t *testing.T) {
	t.Parallel()
	var g Registry
	var closed atomic.Bool
	defer g.Drain()
	late, lateCtx := heldWatch(time.Now().Add(time.Hour))
	if !g.Add(late, &closed) {
		t.Fatal("add refused")
	}
	soon, soonCtx := heldWatch(time.Now().Add(20 * time.Millisecond))
	if !g.Add(soon, &closed) {
		t.Fatal("add refused")
	}
	select {
	case <-soonCtx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the earlier deadline was not watched: the timer still waits for the later one")
	}
	if !errors.Is(context.Cause(soonCtx), drivers.ErrLostExpired) {
		t.Fatalf("cause %v, want ErrLostExpired", context.Cause(soonCtx))
	}
	if lateCtx.Err() != nil {
		t.Fatal("the later watch was cancelled too")
	}
	if next := g.next.Load(); next != late.deadline.Load() {
		t.Errorf("timer re-armed for %d, want the later watch's deadline %d", next, late.deadline.Load())
	}
	g.Remove(late)
	g.Remove(soon)
}

// Watches registering while scans are under way: none is missed.
func TestExpiryTimer_NoDeadlineMissedUnderChurn(t *testing.T) {
	t.Parallel()
	var g Registry
	var closed atomic.Bool
	defer g.Drain()
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 300
	ctxs := make([]context.Context, n)
	watches := make([]*Watch, n)
	for i := range n {
		watches[i], ctxs[i] = heldWatch(time.Now().Add(time.Duration(1+rng.IntN(40)) * time.Millisecond))
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !g.Add(watches[i], &closed) {
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
			t.Fatalf("watch %d was never told its TTL ran out", i)
		}
	}
	for _, w := range watches {
		g.Remove(w)
	}
}
