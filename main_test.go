package lock_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// backend builds a fresh driver for one test.
type backend struct {
	name   string
	fenced bool // grants carry increasing fences
	open   func(t *testing.T) drivers.Driver
}

// backends covers every path of the Manager: plain Driver (fallback
// refresh, polling), Extender, Wait, and the real memory driver with and
// without its optional capabilities.
func backends() []backend {
	return []backend{
		{"fake", true, func(*testing.T) drivers.Driver { return newFake() }},
		{"fake-extender", true, func(*testing.T) drivers.Driver { return fakeExtender{newFake()} }},
		{"fake-waiter", true, func(*testing.T) drivers.Driver { return fakeWaiter{fakeExtender{newFake()}} }},
		{"memory", true, func(t *testing.T) drivers.Driver { return openMemory(t) }},
		{"memory-plain", true, func(t *testing.T) drivers.Driver { return plainDriver{openMemory(t)} }},
	}
}

// plainDriver hides every optional capability of the driver it wraps.
type plainDriver struct{ drivers.Driver }

func (plainDriver) Capabilities() drivers.Capabilities { return drivers.Capabilities{} }

func openMemory(t *testing.T) *memory.Driver {
	t.Helper()
	d, err := memory.New(memory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

func newManager(t *testing.T, d drivers.Driver, opts ...lock.ManagerOption) *lock.Manager {
	t.Helper()
	m := lock.New(d, opts...)
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// eachBackend runs fn once per backend, in parallel.
func eachBackend(t *testing.T, fn func(t *testing.T, b backend, m *lock.Manager)) {
	t.Helper()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			fn(t, b, newManager(t, b.open(t)))
		})
	}
}

// mustAcquire takes l, or fails the test.
func mustAcquire(t *testing.T, l *lock.Lock) {
	t.Helper()
	if ok, err := l.Acquire(t.Context()); !ok || err != nil {
		t.Fatalf("Acquire %s = %v, %v", l.Key(), ok, err)
	}
}

// noop is a callback that does nothing.
func noop(context.Context, *lock.Lock) error { return nil }

// exists asks the backend directly whether key is held.
func exists(t *testing.T, m *lock.Manager, key string) bool {
	t.Helper()
	ok, err := m.Exists(t.Context(), key)
	if err != nil {
		t.Fatalf("Exists(%q): %v", key, err)
	}
	return ok
}

// hold runs a Try on key in the background until the returned release
// function is called; it returns once the lock is held.
func hold(t *testing.T, m *lock.Manager, key string, ttl time.Duration, opts ...lock.Option) (release func() error) {
	t.Helper()
	held := make(chan struct{})
	done := make(chan struct{})
	result := make(chan error, 1)
	go func() {
		result <- m.Try(context.Background(), key, ttl, func(ctx context.Context, _ *lock.Lock) error {
			close(held)
			select {
			case <-done:
			case <-ctx.Done():
			}
			return nil
		}, opts...)
	}()
	select {
	case <-held:
	case err := <-result:
		t.Fatalf("hold %q: %v", key, err)
	}
	var once bool
	release = func() error {
		if !once {
			once = true
			close(done)
		}
		return <-result
	}
	t.Cleanup(func() {
		if !once {
			_ = release()
		}
	})
	return release
}
