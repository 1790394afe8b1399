package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerotal/lock"
)

// A waiter's cap counts from its grant at the backend, and a wait longer
// than the cap does not cut its hold short: after the wait the handle
// learns from the backend how long its grant has left, so the callback
// runs until a safety margin before the real cap (told ErrLostMaxHold
// then), and MaxHoldAt is never past that cap, on every backend.
func TestMaxHold_AWaitLongerThanTheCapKeepsTheWholeCap(t *testing.T) {
	onEveryBackend(t, func(t *testing.T, name string, m *lock.Manager) {
		for _, c := range []struct {
			name         string
			ttl, maxHold time.Duration
			wait         time.Duration // the holder's work, longer than the cap
		}{
			// The cap within the TTL: the refresh after the wait finds it.
			{"cap within the ttl", 3 * time.Second, 2 * time.Second, 2500 * time.Millisecond},
			// The cap several TTLs away: each refresh raises the estimate
			// by what the backend tells, until the cap is within reach.
			{"cap beyond the ttl", 1500 * time.Millisecond, 4 * time.Second, 4500 * time.Millisecond},
		} {
			t.Run(c.name, func(t *testing.T) {
				key := "queued/" + c.name
				release := hold(t, m, key, time.Minute)
				go func() {
					<-time.After(c.wait) // the holder's work
					_ = release()
				}()
				type seen struct {
					started, told time.Time
					capAt         time.Time
					cause         error
				}
				got := make(chan seen, 1)
				err := m.Block(t.Context(), key, c.ttl, func(ctx context.Context, l *lock.Lock) error {
					s := seen{started: time.Now(), capAt: l.MaxHoldAt()}
					select {
					case <-ctx.Done():
						s.told, s.cause = time.Now(), context.Cause(ctx)
					case <-time.After(capGiveUp):
					}
					got <- s
					return nil
				}, lock.WithRefresh(), lock.WithMaxHold(c.maxHold), lock.WithTimeout(capGiveUp))
				s := <-got
				if !errors.Is(err, lock.ErrLostMaxHold) || !errors.Is(s.cause, lock.ErrLostMaxHold) {
					t.Fatalf("Block = %v, the callback's cause %v; want ErrLostMaxHold", err, s.cause)
				}
				if s.capAt.After(s.started.Add(c.maxHold)) {
					t.Errorf("MaxHoldAt %v after the callback started; the cap is %v from the grant, before that", s.capAt.Sub(s.started), c.maxHold)
				}
				if d, want := s.told.Sub(s.started), c.maxHold-c.ttl/5; d < want-300*time.Millisecond || d > want+c.ttl/3 {
					t.Errorf("told %v after the grant; want about the cap %v less the margin %v (the wait of %v must not cut it short)", d, c.maxHold, c.ttl/5, c.wait)
				}
			})
		}
	})
}
