package heldwatch

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
)

// refusingGrant is held for an hour; its refreshes fail with err.
type refusingGrant struct {
	expiresAt time.Time
	err       error
	refreshes atomic.Int32
	lost      atomic.Pointer[drivers.LostError]
}

func (g *refusingGrant) State() (State, time.Time) { return Held, g.expiresAt }
func (g *refusingGrant) Refresh(_ context.Context, begin func()) (bool, error) {
	begin()
	g.refreshes.Add(1)
	return false, g.err
}
func (g *refusingGrant) Lost(l *drivers.LostError) { g.lost.Store(l) }
func (g *refusingGrant) RefreshFailed(error)       {}

// watchRefreshing starts a watch with refresh every 5 ms of g, registered
// and refreshing, and returns the callback's context; the watch is stopped
// when the test ends.
func watchRefreshing(t *testing.T, g Grant, expiresAt time.Time) context.Context {
	t.Helper()
	var reg Registry
	var closed atomic.Bool
	ctx, cancel := context.WithCancelCause(context.Background())
	w := &Watch{}
	w.Init(g, "k", 7, cancel, Options{Refresh: true, Every: 5 * time.Millisecond, Margin: time.Minute})
	w.Arm(context.Background(), expiresAt)
	if !reg.Add(w, &closed) {
		t.Fatal("add refused")
	}
	go w.RefreshWhileHeld()
	t.Cleanup(func() {
		w.Stop()
		reg.Remove(w)
		reg.Drain()
		cancel(nil)
	})
	return ctx
}

// A refresh refused for the credentials (401: the token revoked; 403: no
// longer allowed the key) ends the hold at once with ErrLostRefused and
// the refusal as its cause, while the stop point is an hour away; any
// other refresh error is retried until then.
func TestRefresh_RefusedCredentialsLoseAtOnce(t *testing.T) {
	t.Parallel()
	for _, refusal := range []error{drivers.ErrUnauthorized, drivers.ErrForbidden} {
		t.Run(refusal.Error(), func(t *testing.T) {
			t.Parallel()
			g := &refusingGrant{expiresAt: time.Now().Add(time.Hour), err: fmt.Errorf("refresh: server answered: %w", refusal)}
			ctx := watchRefreshing(t, g, g.expiresAt)
			select {
			case <-ctx.Done():
			case <-time.After(30 * time.Second):
				t.Fatal("a refused refresh did not end the hold")
			}
			var lost *drivers.LostError
			if cause := context.Cause(ctx); !errors.As(cause, &lost) || lost.Reason != drivers.ErrLostRefused || !errors.Is(cause, refusal) {
				t.Fatalf("cause %v; want a LostError of reason ErrLostRefused that matches %v", cause, refusal)
			}
			if n := g.refreshes.Load(); n != 1 {
				t.Errorf("%d refreshes; a refusal is not retried", n)
			}
			if g.lost.Load() == nil {
				t.Error("the grant was not told of the loss")
			}
		})
	}

	// A backend that does not answer is retried, not lost, before the stop
	// point.
	g := &refusingGrant{expiresAt: time.Now().Add(time.Hour), err: drivers.Unavailable("refresh", errors.New("connection refused"))}
	ctx := watchRefreshing(t, g, g.expiresAt)
	deadline := time.Now().Add(30 * time.Second)
	for g.refreshes.Load() < 3 && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			t.Fatalf("an unavailable backend ended the hold an hour before its stop point: %v", context.Cause(ctx))
		case <-time.After(5 * time.Millisecond):
		}
	}
	if n := g.refreshes.Load(); n < 3 || ctx.Err() != nil {
		t.Fatalf("%d refreshes, ctx %v; want retries while held", n, ctx.Err())
	}
}
