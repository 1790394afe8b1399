package heldwatch

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
)

// cappedGrant is a grant whose refreshes succeed or fail (fail), each
// extending it by ttl from the refresh but never past its cap, as a
// backend that enforces a cap on total hold time does.
type cappedGrant struct {
	ttl  time.Duration
	cap  time.Time
	fail bool

	mu        sync.Mutex
	expiresAt time.Time
	refreshes atomic.Int32
	afterCap  atomic.Int32 // refreshes asked for once the grant ended at its cap
}

func (g *cappedGrant) State() (State, time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return Held, g.expiresAt
}

func (g *cappedGrant) Refresh(_ context.Context, begin func()) (bool, error) {
	begin()
	g.refreshes.Add(1)
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.expiresAt.Before(g.cap) {
		g.afterCap.Add(1)
	}
	if g.fail {
		return false, drivers.Unavailable("refresh", errors.New("connection refused"))
	}
	g.expiresAt = earlier(time.Now().Add(g.ttl), g.cap)
	return true, nil
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func (g *cappedGrant) Lost(*drivers.LostError) {}
func (g *cappedGrant) RefreshFailed(error)     {}

// A grant with a cap on total hold time is lost at the cap less the
// margin, with ErrLostMaxHold, refreshing or not: while refreshes succeed
// (each moves its end, but never past the cap), and when its TTL reaches
// past the cap from the start, so that the refreshes, which would fail,
// are never asked for. Once its end is the cap the refresher asks for no
// more refreshes, which could not move it.
func TestWatch_CapEndsTheHoldWithErrLostMaxHold(t *testing.T) {
	t.Parallel()
	const (
		every  = 20 * time.Millisecond
		margin = 100 * time.Millisecond
		hold   = 700 * time.Millisecond
	)
	for _, c := range []struct {
		name string
		ttl  time.Duration
		fail bool
	}{
		{"refreshes succeed", 300 * time.Millisecond, false},
		{"ttl past the cap, refreshes would fail", time.Hour, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			g := &cappedGrant{ttl: c.ttl, cap: start.Add(hold), fail: c.fail}
			g.expiresAt = earlier(start.Add(c.ttl), g.cap)
			var reg Registry
			var closed atomic.Bool
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			w := &Watch{}
			w.Init(g, "k", 7, cancel, Options{Refresh: true, Every: every, Margin: margin, Cap: func() time.Time { return g.cap }})
			w.Arm(context.Background(), g.expiresAt)
			if !reg.Add(w, &closed) {
				t.Fatal("add refused")
			}
			go w.RefreshWhileHeld()
			defer func() {
				w.Stop()
				reg.Remove(w)
				reg.Drain()
			}()
			select {
			case <-ctx.Done():
			case <-time.After(30 * time.Second):
				t.Fatalf("the hold was never ended; %d refreshes", g.refreshes.Load())
			}
			at := time.Since(start)
			var lost *drivers.LostError
			if cause := context.Cause(ctx); !errors.As(cause, &lost) || lost.Reason != drivers.ErrLostMaxHold {
				t.Fatalf("cause %v after %v; want a LostError of reason ErrLostMaxHold", cause, at)
			}
			if at < hold-margin {
				t.Errorf("lost after %v; the cap less the margin is %v", at, hold-margin)
			}
			if n := g.afterCap.Load(); n > 0 {
				t.Errorf("%d refreshes once the grant's end was its cap", n)
			}
		})
	}
}
