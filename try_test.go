package lock_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/internal/testkit/poll"
)

func TestManager_TryRunsCallbackAndReleases(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend, m *lock.Manager) {
		var fence uint64
		err := m.Try(t.Context(), "job", time.Minute, func(ctx context.Context, l *lock.Lock) error {
			if !l.IsAcquired() || l.Key() != "job" || l.TTL() != time.Minute {
				t.Errorf("inside Try: acquired=%v key=%q ttl=%v", l.IsAcquired(), l.Key(), l.TTL())
			}
			if !exists(t, m, "job") {
				t.Error("the backend does not hold the key inside Try")
			}
			fence = l.Fence()
			return nil
		})
		if err != nil {
			t.Fatalf("Try: %v", err)
		}
		if b.fenced && fence == 0 {
			t.Error("fence is 0 on a fenced backend")
		}
		if exists(t, m, "job") {
			t.Error("the key is still held after Try returned")
		}
	})
}

func TestManager_TryFailsFastWhenHeld(t *testing.T) {
	eachBackend(t, func(t *testing.T, _ backend, m *lock.Manager) {
		release := hold(t, m, "invoice:123", time.Minute)
		ran := false
		start := time.Now()
		err := m.Try(t.Context(), "invoice:123", time.Minute, func(context.Context, *lock.Lock) error {
			ran = true
			return nil
		})
		var na *lock.NotAcquiredError
		if !errors.As(err, &na) || !errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("Try on a held key: %v, want *NotAcquiredError", err)
		}
		if na.Key != "invoice:123" {
			t.Errorf("NotAcquiredError.Key = %q, want the key without prefix", na.Key)
		}
		if ran {
			t.Error("callback ran without the lock")
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("Try took %v: it must not wait", d)
		}
		if err := release(); err != nil {
			t.Fatalf("holder: %v", err)
		}
		if err := m.Try(t.Context(), "invoice:123", time.Minute, func(context.Context, *lock.Lock) error { return nil }); err != nil {
			t.Fatalf("Try after release: %v", err)
		}
	})
}

func TestManager_TryReturnsCallbackErrorAndReleases(t *testing.T) {
	eachBackend(t, func(t *testing.T, _ backend, m *lock.Manager) {
		boom := errors.New("boom")
		err := m.Try(t.Context(), "k", time.Minute, func(context.Context, *lock.Lock) error { return boom })
		if !errors.Is(err, boom) {
			t.Fatalf("Try = %v, want the callback's error", err)
		}
		if exists(t, m, "k") {
			t.Error("lock not released after the callback failed")
		}
	})
}

func TestManager_TryReleasesOnPanicAndRepanics(t *testing.T) {
	eachBackend(t, func(t *testing.T, _ backend, m *lock.Manager) {
		recovered := func() (v any) {
			defer func() { v = recover() }()
			_ = m.Try(t.Context(), "k", time.Minute, func(context.Context, *lock.Lock) error { panic("kaput") })
			return nil
		}()
		if recovered != "kaput" {
			t.Fatalf("recovered %v, want the callback's panic", recovered)
		}
		if exists(t, m, "k") {
			t.Error("lock not released after the callback panicked")
		}
	})
}

func TestManager_TryReleasesWhenCallerCancelled(t *testing.T) {
	eachBackend(t, func(t *testing.T, _ backend, m *lock.Manager) {
		ctx, cancel := context.WithCancel(t.Context())
		err := m.Try(ctx, "k", time.Minute, func(ctx context.Context, _ *lock.Lock) error {
			cancel()
			<-ctx.Done()
			return ctx.Err()
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Try = %v, want context.Canceled", err)
		}
		// The release goes out in the background once the caller's ctx
		// has ended, so that Try returns at once.
		poll.Until(t, 2*time.Second, "the release after a cancelled caller", func() bool { return !exists(t, m, "k") })
	})
}

func TestManager_TryWithCancelledContextDoesNotRun(t *testing.T) {
	eachBackend(t, func(t *testing.T, _ backend, m *lock.Manager) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		err := m.Try(ctx, "k", time.Minute, func(context.Context, *lock.Lock) error {
			t.Error("callback ran with a cancelled context")
			return nil
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Try = %v, want context.Canceled", err)
		}
		if exists(t, m, "k") {
			t.Error("the key is held after a cancelled Try")
		}
	})
}

func TestManager_BlockWaitsForRelease(t *testing.T) {
	eachBackend(t, func(t *testing.T, _ backend, m *lock.Manager) {
		release := hold(t, m, "report", time.Minute)
		got := make(chan error, 1)
		ran := make(chan struct{})
		go func() {
			got <- m.Block(t.Context(), "report", time.Minute, func(context.Context, *lock.Lock) error {
				close(ran)
				return nil
			}, lock.WithTimeout(10*time.Second), lock.WithRetryDelay(5*time.Millisecond))
		}()
		select {
		case <-ran:
			t.Fatal("Block ran its callback while the lock was held")
		case err := <-got:
			t.Fatalf("Block returned early: %v", err)
		default:
		}
		if err := release(); err != nil {
			t.Fatalf("holder: %v", err)
		}
		if err := <-got; err != nil {
			t.Fatalf("Block: %v", err)
		}
		select {
		case <-ran:
		default:
			t.Fatal("Block returned nil without running the callback")
		}
	})
}

func TestManager_BlockTimeoutIsNotAcquired(t *testing.T) {
	eachBackend(t, func(t *testing.T, _ backend, m *lock.Manager) {
		hold(t, m, "busy", time.Minute)
		const timeout = 80 * time.Millisecond
		start := time.Now()
		err := m.Block(t.Context(), "busy", time.Minute, func(context.Context, *lock.Lock) error {
			t.Error("callback ran without the lock")
			return nil
		}, lock.WithTimeout(timeout), lock.WithRetryDelay(10*time.Millisecond))
		elapsed := time.Since(start)
		var na *lock.NotAcquiredError
		if !errors.As(err, &na) || na.Key != "busy" {
			t.Fatalf("Block timeout = %v, want *NotAcquiredError{Key: busy}", err)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			t.Error("a wait timeout must not look like a context error")
		}
		if elapsed < timeout {
			t.Errorf("gave up after %v, before the %v timeout", elapsed, timeout)
		}
	})
}

func TestManager_BlockDefaultTimeoutIsTTL(t *testing.T) {
	eachBackend(t, func(t *testing.T, _ backend, m *lock.Manager) {
		release := hold(t, m, "busy", time.Minute)
		const ttl = 60 * time.Millisecond
		start := time.Now()
		err := m.Block(t.Context(), "busy", ttl, func(context.Context, *lock.Lock) error { return nil },
			lock.WithRetryDelay(5*time.Millisecond))
		if !errors.Is(err, lock.ErrNotAcquired) {
			t.Fatalf("Block = %v, want ErrNotAcquired", err)
		}
		if d := time.Since(start); d < ttl || d > 5*time.Second {
			t.Errorf("waited %v, want about the TTL %v", d, ttl)
		}
		_ = release()
	})
}

func TestManager_BlockCallerCancelIsContextError(t *testing.T) {
	eachBackend(t, func(t *testing.T, _ backend, m *lock.Manager) {
		hold(t, m, "busy", time.Minute)
		ctx, cancel := context.WithCancel(t.Context())
		got := make(chan error, 1)
		go func() {
			got <- m.Block(ctx, "busy", time.Minute, func(context.Context, *lock.Lock) error { return nil },
				lock.WithTimeout(time.Minute), lock.WithRetryDelay(5*time.Millisecond))
		}()
		cancel()
		err := <-got
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Block = %v, want context.Canceled", err)
		}
		if errors.Is(err, lock.ErrNotAcquired) {
			t.Error("the caller's cancellation must not look like a timeout")
		}
	})
}

func TestManager_BlockServesEveryWaiter(t *testing.T) {
	eachBackend(t, func(t *testing.T, _ backend, m *lock.Manager) {
		const workers = 6
		inside := 0
		most := 0
		results := make(chan error, workers)
		for i := range workers {
			go func() {
				results <- m.Block(t.Context(), "hot", time.Minute, func(ctx context.Context, l *lock.Lock) error {
					inside++ // unsynchronised on purpose: the race detector checks the exclusion
					if inside > most {
						most = inside
					}
					inside--
					return nil
				}, lock.WithTimeout(10*time.Second), lock.WithRetryDelay(time.Millisecond+time.Duration(i)*time.Microsecond))
			}()
		}
		for range workers {
			if err := <-results; err != nil {
				t.Errorf("Block: %v", err)
			}
		}
		if most != 1 {
			t.Errorf("%d callbacks inside at once", most)
		}
	})
}

func TestManager_PrefixAppliedOnceAndHiddenFromCaller(t *testing.T) {
	f := newFake()
	m := newManager(t, f, lock.WithPrefix("app:"))
	hold(t, m, "k", time.Minute)
	err := m.Try(t.Context(), "k", time.Minute, func(context.Context, *lock.Lock) error { return nil })
	var na *lock.NotAcquiredError
	if !errors.As(err, &na) || na.Key != "k" {
		t.Fatalf("Try = %v, want NotAcquiredError with the caller's key", err)
	}
	for _, key := range f.faults.Keys() {
		if key != "app:k" {
			t.Errorf("driver saw key %q, want app:k", key)
		}
	}
	if m.Prefix() != "app:" {
		t.Errorf("Prefix() = %q", m.Prefix())
	}
	if got := lock.New(newFake()).Prefix(); got != lock.DefaultPrefix {
		t.Errorf("default prefix %q, want %q", got, lock.DefaultPrefix)
	}
}

func TestManager_FencesIncreasePerGrant(t *testing.T) {
	eachBackend(t, func(t *testing.T, _ backend, m *lock.Manager) {
		var last uint64
		for i := range 5 {
			err := m.Try(t.Context(), "fenced", time.Minute, func(_ context.Context, l *lock.Lock) error {
				if l.Fence() <= last {
					return fmt.Errorf("grant %d: fence %d after %d", i, l.Fence(), last)
				}
				last = l.Fence()
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestManager_ReleaseFailureAfterSuccessIsLoggedNotReturned(t *testing.T) {
	t.Parallel()
	f := newFake()
	var logs strings.Builder
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	m := newManager(t, f, lock.WithLogger(logger))
	err := m.Try(t.Context(), "k", time.Minute, func(context.Context, *lock.Lock) error {
		f.setDown(true) // the backend goes away while the work finishes
		return nil
	})
	f.setDown(false)
	if err != nil {
		t.Fatalf("Try = %v: the work succeeded, a failed release must not undo that", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "release after callback failed") {
		t.Errorf("no warning logged; logs: %q", logs.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// WithOwner names the grant's owner at the backend; an empty one is
// refused before any backend call.
func TestManager_WithOwnerNamesTheGrant(t *testing.T) {
	eachBackend(t, func(t *testing.T, _ backend, m *lock.Manager) {
		err := m.Try(t.Context(), "k", time.Minute, func(ctx context.Context, l *lock.Lock) error {
			if l.Owner() != "deploy-42" {
				t.Errorf("Owner() = %q, want deploy-42", l.Owner())
			}
			// Another process acting for the holder releases it by that name.
			if ok, err := m.Driver().Release(ctx, m.Prefix()+"k", "deploy-42"); err != nil || !ok {
				t.Errorf("release by the named owner = %v, %v", ok, err)
			}
			return nil
		}, lock.WithOwner("deploy-42"))
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Try(t.Context(), "k", time.Minute, noop, lock.WithOwner("")); !errors.Is(err, lock.ErrInvalid) {
			t.Fatalf("WithOwner(\"\") = %v, want ErrInvalid", err)
		}
	})
}
