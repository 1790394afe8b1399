package lock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers"
)

func TestManager_RejectsBadInputBeforeBackend(t *testing.T) {
	t.Parallel()
	longKey := strings.Repeat("k", drivers.MaxKeyLen-len(lock.DefaultPrefix)+1)
	okKey := strings.Repeat("k", drivers.MaxKeyLen-len(lock.DefaultPrefix))
	cases := []struct {
		name  string
		key   string
		ttl   time.Duration
		fn    lock.Func
		opts  []lock.Option
		field string
	}{
		{"empty key", "", time.Second, noop, nil, "key"},
		{"key too long with prefix", longKey, time.Second, noop, nil, "key"},
		{"key not UTF-8", "bad\xff", time.Second, noop, nil, "key"},
		{"zero ttl", "k", 0, noop, nil, "ttl"},
		{"negative ttl", "k", -time.Second, noop, nil, "ttl"},
		{"ttl below minimum", "k", drivers.MinTTL - 1, noop, nil, "ttl"},
		{"ttl above maximum", "k", drivers.MaxTTL + 1, noop, nil, "ttl"},
		{"nil callback", "k", time.Second, nil, nil, "fn"},
		{"zero timeout", "k", time.Second, noop, []lock.Option{lock.WithTimeout(0)}, "timeout"},
		{"negative retry delay", "k", time.Second, noop, []lock.Option{lock.WithRetryDelay(-time.Millisecond)}, "retry delay"},
		{"zero refresh interval", "k", time.Second, noop, []lock.Option{lock.WithRefreshEvery(0)}, "refresh interval"},
		{"refresh interval = ttl", "k", time.Second, noop, []lock.Option{lock.WithRefreshEvery(time.Second)}, "refresh interval"},
		{"negative safety margin", "k", time.Second, noop, []lock.Option{lock.WithSafetyMargin(-time.Millisecond)}, "safety margin"},
		{"safety margin = ttl", "k", time.Second, noop, []lock.Option{lock.WithSafetyMargin(time.Second)}, "safety margin"},
		// The first refresh would come after the stop point.
		{"refresh interval past the stop point", "k", time.Second, noop, []lock.Option{lock.WithRefreshEvery(800 * time.Millisecond)}, "refresh interval"},
		{"refresh interval past an explicit stop point", "k", time.Second, noop, []lock.Option{lock.WithRefreshEvery(400 * time.Millisecond), lock.WithSafetyMargin(600 * time.Millisecond)}, "refresh interval"},
		// Shorter intervals would be a busy loop of backend calls.
		{"retry delay below minimum", "k", time.Second, noop, []lock.Option{lock.WithRetryDelay(lock.MinInterval - 1)}, "retry delay"},
		{"refresh interval below minimum", "k", time.Second, noop, []lock.Option{lock.WithRefreshEvery(time.Nanosecond)}, "refresh interval"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake()
			m := newManager(t, f)
			for name, call := range map[string]func() error{
				"Try":   func() error { return m.Try(t.Context(), c.key, c.ttl, c.fn, c.opts...) },
				"Block": func() error { return m.Block(t.Context(), c.key, c.ttl, c.fn, c.opts...) },
			} {
				err := call()
				var inv *lock.InvalidError
				if !errors.Is(err, lock.ErrInvalid) || !errors.As(err, &inv) {
					t.Fatalf("%s = %v, want ErrInvalid", name, err)
				}
				if inv.Field != c.field || inv.Reason == "" {
					t.Errorf("%s: field %q reason %q, want field %q", name, inv.Field, inv.Reason, c.field)
				}
			}
			if n := f.faults.Calls(); n != 0 {
				t.Errorf("%d backend calls for invalid input", n)
			}
		})
	}
	t.Run("longest key accepted", func(t *testing.T) {
		m := newManager(t, newFake())
		if err := m.Try(t.Context(), okKey, time.Second, noop); err != nil {
			t.Fatalf("Try with a key of exactly the limit: %v", err)
		}
	})
	t.Run("limit message names the limit", func(t *testing.T) {
		m := newManager(t, newFake())
		err := m.Try(t.Context(), longKey, time.Second, noop)
		if !strings.Contains(err.Error(), "1024") {
			t.Errorf("error %q does not name the limit", err)
		}
	})
}

func TestLock_InvalidHandleReportsOnEveryCall(t *testing.T) {
	t.Parallel()
	f := newFake()
	m := newManager(t, f)
	ctx := context.Background()
	for _, l := range []*lock.Lock{m.Make("", time.Second), m.Make("k", 0), m.Make("k", drivers.MaxTTL*2)} {
		_, errA := l.Acquire(ctx)
		_, errR := l.Refresh(ctx)
		for name, err := range map[string]error{
			"Acquire": errA, "Refresh": errR,
			"Block": l.Block(ctx, time.Second), "Release": l.Release(ctx), "ForceRelease": l.ForceRelease(ctx),
		} {
			if !errors.Is(err, lock.ErrInvalid) {
				t.Errorf("%s on Make(%q, %v) = %v, want ErrInvalid", name, l.Key(), l.TTL(), err)
			}
		}
	}
	if _, err := m.Exists(ctx, ""); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("Exists(\"\") = %v", err)
	}
	if n := f.faults.Calls(); n != 0 {
		t.Errorf("%d backend calls for invalid handles", n)
	}
}

func TestManager_PrefixCountsTowardsKeyLimit(t *testing.T) {
	t.Parallel()
	m := newManager(t, newFake(), lock.WithPrefix(strings.Repeat("p", 1000)))
	err := m.Try(t.Context(), strings.Repeat("k", 25), time.Second, noop)
	if !errors.Is(err, lock.ErrInvalid) {
		t.Fatalf("Try = %v, want ErrInvalid", err)
	}
	if err := m.Try(t.Context(), strings.Repeat("k", 24), time.Second, noop); err != nil {
		t.Fatalf("Try at the limit = %v", err)
	}
}

func TestNew_PanicsOnNilDriver(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("New(nil) did not panic")
		}
	}()
	lock.New(nil)
}
