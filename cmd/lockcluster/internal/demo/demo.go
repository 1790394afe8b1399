// Package demo is what "lockcluster dev --demo" shows on a fresh
// cluster: each step exercises one guarantee of the lock library and
// checks it, so the demo doubles as a smoke test.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/client"
)

// Run walks through what the cluster guarantees, printing as it goes:
// contention, a FIFO hand-off, fencing, refresh past the TTL and the
// lost-lock signal. Each step checks what it shows and fails otherwise.
func Run(ctx context.Context, w io.Writer, addrs []string, token string) error {
	c, err := client.New(client.Config{Addrs: addrs, Token: token})
	if err != nil {
		return err
	}
	m := lock.New(c, lock.WithPrefix("demo:"))
	defer m.Close()
	return Steps(ctx, w, m)
}

// Steps runs the demo on any Manager.
func Steps(ctx context.Context, w io.Writer, m *lock.Manager) error {
	say := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	steps := []struct {
		title string
		run   func(context.Context, *lock.Manager, func(string, ...any)) error
	}{
		{"contention: a second Try fails fast", demoContention},
		{"hand-off: a waiter gets the key the moment it is released", demoHandOff},
		{"fencing: every grant has a larger fence", demoFencing},
		{"refresh: a 1s lock held for 2.5s", demoRefresh},
		{"lost: the holder is told when its lock is taken away", demoLost},
	}
	for i, s := range steps {
		say("\n[%d/%d] %s", i+1, len(steps), s.title)
		if err := s.run(ctx, m, say); err != nil {
			return fmt.Errorf("%s: %w", s.title, err)
		}
	}
	say("\ndemo done.")
	return nil
}

func demoContention(ctx context.Context, m *lock.Manager, say func(string, ...any)) error {
	return m.Try(ctx, "report", 10*time.Second, func(ctx context.Context, l *lock.Lock) error {
		say("  worker A holds %q (fence %d)", l.Key(), l.Fence())
		err := m.Try(ctx, "report", 10*time.Second, func(context.Context, *lock.Lock) error {
			return errors.New("worker B ran while A held the lock")
		})
		if !errors.Is(err, lock.ErrNotAcquired) {
			return fmt.Errorf("worker B: got %v, want not acquired", err)
		}
		say("  worker B: %v", err)
		return nil
	})
}

func demoHandOff(ctx context.Context, m *lock.Manager, say func(string, ...any)) error {
	a := m.Make("invoice:42", 10*time.Second)
	if ok, err := a.Acquire(ctx); err != nil || !ok {
		return fmt.Errorf("worker A acquire: ok=%v err=%v", ok, err)
	}
	fenceA := a.Fence()
	say("  worker A holds %q (fence %d); worker B waits", a.Key(), fenceA)
	b := m.Make("invoice:42", 10*time.Second)
	got := make(chan error, 1)
	waitStart := time.Now()
	go func() { got <- b.Block(ctx, 10*time.Second) }()
	// Give B time to queue so the hand-off is visible; A's work takes a moment.
	select {
	case err := <-got:
		return fmt.Errorf("worker B got the key while A held it: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	releasedAt := time.Now()
	if err := a.Release(ctx); err != nil {
		return err
	}
	say("  worker A releases after %s", releasedAt.Sub(waitStart).Round(time.Millisecond))
	if err := <-got; err != nil {
		return fmt.Errorf("worker B: %w", err)
	}
	defer func() { _ = b.Release(context.WithoutCancel(ctx)) }()
	say("  worker B got it %s after the release (fence %d > %d)",
		time.Since(releasedAt).Round(100*time.Microsecond), b.Fence(), fenceA)
	if b.Fence() <= fenceA {
		return fmt.Errorf("fence did not grow: %d after %d", b.Fence(), fenceA)
	}
	return nil
}

// fencedStore stands for a resource that refuses writes carrying a fence
// older than one it has already seen.
type fencedStore struct {
	mu      sync.Mutex
	highest uint64
}

func (s *fencedStore) write(fence uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fence < s.highest {
		return fmt.Errorf("write with fence %d refused: %d already seen", fence, s.highest)
	}
	s.highest = fence
	return nil
}

func demoFencing(ctx context.Context, m *lock.Manager, say func(string, ...any)) error {
	store := &fencedStore{}
	var fences []uint64
	for range 3 {
		l := m.Make("ledger", 10*time.Second)
		if ok, err := l.Acquire(ctx); err != nil || !ok {
			return fmt.Errorf("acquire: ok=%v err=%v", ok, err)
		}
		fences = append(fences, l.Fence())
		if err := store.write(l.Fence()); err != nil {
			return err
		}
		if err := l.Release(ctx); err != nil {
			return err
		}
	}
	say("  three grants of %q: fences %v", "ledger", fences)
	err := store.write(fences[0])
	if err == nil {
		return errors.New("the store accepted a stale fence")
	}
	say("  a late holder with fence %d: %v", fences[0], err)
	return nil
}

func demoRefresh(ctx context.Context, m *lock.Manager, say func(string, ...any)) error {
	return m.Try(ctx, "export", time.Second, func(ctx context.Context, l *lock.Lock) error {
		start := time.Now()
		for time.Since(start) < 2500*time.Millisecond {
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-time.After(500 * time.Millisecond): // the work
			}
			say("  %4dms: still held, fence %d, expires in ~%s", time.Since(start).Milliseconds(), l.Fence(),
				time.Until(l.ExpiresAt()).Round(10*time.Millisecond))
		}
		return nil
	}, lock.WithRefresh())
}

func demoLost(ctx context.Context, m *lock.Manager, say func(string, ...any)) error {
	err := m.Try(ctx, "payment", 2*time.Second, func(ctx context.Context, l *lock.Lock) error {
		say("  worker A holds %q (fence %d); an operator force-releases it", l.Key(), l.Fence())
		if err := m.Make("payment", time.Second).ForceRelease(ctx); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			say("  worker A's context is cancelled: %v", context.Cause(ctx))
			return ctx.Err()
		case <-time.After(5 * time.Second):
			return errors.New("worker A was not told")
		}
	}, lock.WithRefreshEvery(200*time.Millisecond))
	if !errors.Is(err, lock.ErrLost) {
		return fmt.Errorf("try returned %v, want a LostError", err)
	}
	say("  Try returned: %v", err)
	return nil
}
