package lock_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers/memory"
	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/internal/testkit/realbackends"
)

// sharedBackend opens two Managers on one backend: the one to shut down,
// and another that sees its locks.
type sharedBackend struct {
	name string
	open func(t *testing.T) (*lock.Manager, *lock.Manager)
}

func sharedBackends() []sharedBackend {
	return []sharedBackend{
		{"memory", func(t *testing.T) (*lock.Manager, *lock.Manager) {
			e, err := engine.New(engine.Config{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Close() })
			return newManager(t, memory.Wrap(e)), newManager(t, memory.Wrap(e))
		}},
		{"sqlite-file", func(t *testing.T) (*lock.Manager, *lock.Manager) {
			cfg := lock.Config{Driver: "sqlite", SQLite: lock.SQLiteConfig{Path: filepath.Join(t.TempDir(), "locks.db")}}
			open := func() *lock.Manager {
				return realbackends.Open(t, cfg)
			}
			return open(), open()
		}},
	}
}

// onSharedBackends runs check as a parallel subtest on each of
// sharedBackends, with its two Managers.
func onSharedBackends(t *testing.T, check func(t *testing.T, m, other *lock.Manager)) {
	for _, b := range sharedBackends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			m, other := b.open(t)
			check(t, m, other)
		})
	}
}

// Shutdown cancels the running callbacks, waits for them, releases their
// locks (another Manager takes them at once, long before their TTL) and
// refuses new work meanwhile.
func TestManager_ShutdownWaitsForCallbacksAndReleasesTheirLocks(t *testing.T) {
	t.Parallel()
	onSharedBackends(t, func(t *testing.T, m, other *lock.Manager) {
		// A key held elsewhere, for a Block that is waiting when
		// Shutdown begins.
		releaseBusy := hold(t, other, "busy", time.Minute)
		defer func() { _ = releaseBusy() }()
		blocked := make(chan error, 1)
		go func() {
			blocked <- m.Block(context.Background(), "busy", time.Minute, noop, lock.WithTimeout(time.Minute))
		}()

		keys := []string{"plain", "refreshed"}
		started := make(chan struct{}, len(keys))
		causes := make(chan error, len(keys))
		proceed := make(chan struct{})
		results := make(chan error, len(keys))
		for _, key := range keys {
			var opts []lock.Option
			if key == "refreshed" {
				opts = append(opts, lock.WithRefreshEvery(10*time.Millisecond))
			}
			go func() {
				results <- m.Try(context.Background(), key, time.Minute, func(ctx context.Context, _ *lock.Lock) error {
					started <- struct{}{}
					<-ctx.Done()
					causes <- context.Cause(ctx)
					<-proceed // still working after the cancellation
					return ctx.Err()
				}, opts...)
			}()
		}
		for range keys {
			<-started
		}

		shutdown := make(chan error, 1)
		go func() { shutdown <- m.Shutdown(context.Background()) }()
		for range keys {
			if cause := <-causes; !errors.Is(cause, lock.ErrClosed) || !errors.Is(cause, lock.ErrLostClosed) {
				t.Errorf("callback context cause = %v, want ErrLostClosed", cause)
			}
		}
		if err := <-blocked; !errors.Is(err, lock.ErrClosed) {
			t.Errorf("Block waiting during Shutdown = %v, want ErrClosed", err)
		}
		ctx := t.Context()
		if err := m.Try(ctx, "new", time.Minute, noop); !errors.Is(err, lock.ErrClosed) {
			t.Errorf("Try during Shutdown = %v, want ErrClosed", err)
		}
		if err := m.Block(ctx, "new", time.Minute, noop); !errors.Is(err, lock.ErrClosed) {
			t.Errorf("Block during Shutdown = %v, want ErrClosed", err)
		}
		if _, err := m.Make("new", time.Minute).Acquire(ctx); !errors.Is(err, lock.ErrClosed) {
			t.Errorf("Lock.Acquire during Shutdown = %v, want ErrClosed", err)
		}
		// The callbacks hold their locks until they return.
		for _, key := range keys {
			if !exists(t, other, key) {
				t.Errorf("%q released while its callback still runs", key)
			}
		}
		select {
		case err := <-shutdown:
			t.Fatalf("Shutdown returned %v while callbacks were running", err)
		default:
		}

		close(proceed)
		if err := <-shutdown; err != nil {
			t.Fatalf("Shutdown = %v", err)
		}
		// Released, not left to the TTL: the other Manager takes them
		// at once.
		for _, key := range keys {
			if err := other.Try(ctx, key, time.Minute, noop); err != nil {
				t.Errorf("Try of %q after Shutdown = %v, want it free", key, err)
			}
		}
		for range keys {
			if err := <-results; !errors.Is(err, lock.ErrClosed) {
				t.Errorf("Try running during Shutdown = %v, want ErrClosed", err)
			}
		}
		if _, err := m.Exists(ctx, "plain"); !errors.Is(err, lock.ErrClosed) {
			t.Errorf("Exists after Shutdown = %v, want ErrClosed", err)
		}
		if err := m.Shutdown(ctx); err != nil {
			t.Errorf("second Shutdown = %v, want nil", err)
		}
	})
}

// A callback that ignores its context holds Shutdown up only until ctx
// ends: Shutdown returns ctx's error and closes nothing; the callback's
// lock is released when it returns.
func TestManager_ShutdownReturnsAtDeadlineWhenCallbackIgnoresContext(t *testing.T) {
	t.Parallel()
	onSharedBackends(t, func(t *testing.T, m, other *lock.Manager) {
		started := make(chan struct{})
		stop := make(chan struct{})
		result := make(chan error, 1)
		go func() {
			result <- m.Try(context.Background(), "stubborn", time.Minute, func(context.Context, *lock.Lock) error {
				close(started)
				<-stop // ignores its context
				return nil
			})
		}()
		<-started

		const grace = 100 * time.Millisecond
		begin := time.Now() // before the deadline is set: it counts from there
		ctx, cancel := context.WithTimeout(t.Context(), grace)
		defer cancel()
		err := m.Shutdown(ctx)
		took := time.Since(begin)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown = %v, want context.DeadlineExceeded", err)
		}
		if took < grace || took > grace+5*time.Second {
			t.Errorf("Shutdown returned after %v, want about %v", took, grace)
		}
		if err := m.Try(t.Context(), "new", time.Minute, noop); !errors.Is(err, lock.ErrClosed) {
			t.Errorf("Try after a Shutdown that timed out = %v, want ErrClosed", err)
		}
		if !exists(t, other, "stubborn") {
			t.Fatal("the running callback's lock was released under it")
		}

		close(stop)
		if err := <-result; !errors.Is(err, lock.ErrLostClosed) {
			t.Errorf("Try of the stubborn callback = %v, want ErrLostClosed", err)
		}
		// The Manager is not closed: the late callback released its
		// lock on return.
		if err := other.Try(t.Context(), "stubborn", time.Minute, noop); err != nil {
			t.Errorf("Try of the stubborn key after its callback returned = %v, want it free", err)
		}
		if err := m.Shutdown(t.Context()); err != nil {
			t.Errorf("Shutdown once the callback returned = %v", err)
		}
	})
}
