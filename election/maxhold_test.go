package election_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/memory"
	"github.com/zerotal/lock/election"
	"github.com/zerotal/lock/internal/testkit/realbackends"
)

// A leadership of an election with WithMaxHold ends at its cap however
// well its lease is refreshed, on every backend: its Context ends with a
// *lock.LostError of reason ErrLostMaxHold a safety margin before the
// cap, never earlier, and the next candidate leads by the cap, in a
// higher term.
func TestElection_MaxHoldEndsTheLeadership(t *testing.T) {
	onBackends(t, func(t *testing.T, name string, m *lock.Manager) {
		const (
			ttl  = 3 * time.Second
			hold = 2 * time.Second
		)
		e, err := election.New(m, "capped", ttl, election.WithMaxHold(hold))
		if err != nil {
			t.Fatalf("New with WithMaxHold on %s: %v", name, err)
		}
		sent := time.Now()
		a := mustCampaign(t, e, "a")
		granted := time.Now()

		type won struct {
			l   *election.Leadership
			at  time.Time
			err error
		}
		next := make(chan won, 1)
		go func() {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			l, err := e.Campaign(ctx, "b")
			next <- won{l, time.Now(), err}
		}()

		var told time.Time
		select {
		case <-a.Context().Done():
			told = time.Now()
		case <-time.After(30 * time.Second):
			t.Fatalf("the leadership still runs %v after it began; its cap is %v", time.Since(granted), hold)
		}
		var lost *lock.LostError
		if cause := context.Cause(a.Context()); !errors.As(cause, &lost) || lost.Reason != lock.ErrLostMaxHold {
			t.Errorf("the leadership ended with %v; want a *LostError of reason ErrLostMaxHold", cause)
		}
		if early := sent.Add(hold - ttl/5); told.Before(early) {
			t.Errorf("told %v after the campaign was sent; want the cap %v less the margin %v", told.Sub(sent), hold, ttl/5)
		}
		b := <-next // bounded by its 30 s
		if b.err != nil {
			t.Fatalf("the next candidate: %v", b.err)
		}
		defer func() { _ = b.l.Resign(context.Background()) }()
		if b.at.Before(told) || b.at.After(granted.Add(hold+ttl/3)) {
			t.Errorf("the next candidate led %v after the first began; want after the first was told (%v) and by the cap %v plus a refresh period",
				b.at.Sub(granted), told.Sub(granted), hold)
		}
		if b.l.Term() <= a.Term() {
			t.Errorf("term %d after %d", b.l.Term(), a.Term())
		}
		select {
		case <-a.Done():
		case <-time.After(30 * time.Second):
			t.Error("the capped leadership's Done was not closed")
		}
	})
}

// uncapped is the memory driver without its cap on total hold time.
type uncapped struct{ *memory.Driver }

func (uncapped) Capabilities() drivers.Capabilities { return drivers.Capabilities{Wait: true} }

// New refuses a cap the backend cannot enforce (ErrUnsupported) and one
// within the lease's safety margin (ErrInvalid).
func TestElection_MaxHoldRefusedByNew(t *testing.T) {
	d, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	m := lock.New(uncapped{d})
	defer m.Close()
	if _, err := election.New(m, "x", 0, election.WithMaxHold(time.Hour)); !errors.Is(err, lock.ErrUnsupported) {
		t.Errorf("New with a cap on a backend that cannot enforce one = %v; want ErrUnsupported", err)
	}
	m2 := realbackends.Open(t, lock.Config{})
	if _, err := election.New(m2, "x", 10*time.Second, election.WithMaxHold(2*time.Second)); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("New with a cap within the margin = %v; want ErrInvalid", err)
	}
}
