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

// Two different claims in one call are a mistake, not a choice: the last
// one used to win silently, so Read() with Write() took a write lock.
func TestClaims_ConflictingOptionsAreInvalid(t *testing.T) {
	t.Parallel()
	m := newManager(t, openMemory(t))
	cases := []struct {
		name string
		opts []lock.Option
		want []string // what the reason names
	}{
		{"Read and Write", []lock.Option{lock.Read(), lock.Write()}, []string{"read", "write"}},
		{"Write and Read", []lock.Option{lock.Write(), lock.Read()}, []string{"write", "read"}},
		{"Read and Semaphore", []lock.Option{lock.Read(), lock.Semaphore(2)}, []string{"read", "semaphore of 2"}},
		{"two semaphores", []lock.Option{lock.Semaphore(2), lock.Semaphore(3)}, []string{"semaphore of 2", "semaphore of 3"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for call, err := range map[string]error{
				"Try":   m.Try(t.Context(), "k", time.Second, noop, c.opts...),
				"Block": m.Block(t.Context(), "k", time.Second, noop, c.opts...),
				"Make":  m.Make("k", time.Second, c.opts...).Err(),
			} {
				inv, ok := errors.AsType[*lock.InvalidError](err)
				if !ok || !errors.Is(err, lock.ErrInvalid) || inv.Field != "claim" {
					t.Fatalf("%s = %v; want an *InvalidError of field claim", call, err)
				}
				for _, w := range c.want {
					if !strings.Contains(inv.Reason, w) {
						t.Errorf("%s: %q does not name %q", call, inv.Reason, w)
					}
				}
			}
		})
	}
	// The same claim twice says one thing, and is taken.
	if err := m.Try(t.Context(), "k", time.Second, noop, lock.Read(), lock.Read()); err != nil {
		t.Errorf("Try(Read, Read) = %v; want nil", err)
	}
	if err := m.Make("k", time.Second, lock.Semaphore(2), lock.Semaphore(2)).Err(); err != nil {
		t.Errorf("Make(Semaphore(2) twice).Err() = %v; want nil", err)
	}
}

// A holder description is shown to others as it was given (never cut in
// silence), and is one word of visible characters, as the default
// "pid4242@host-3" is: owners travel in key=value lines and columns.
func TestHolder_BadDescriptionsAreInvalid(t *testing.T) {
	t.Parallel()
	bad := map[string]string{
		"too long":      strings.Repeat("h", lock.MaxHolderLen+1),
		"a space":       "deploy job",
		"a tab":         "deploy\tjob",
		"a newline":     "deploy\njob",
		"a control":     "deploy\x1bjob",
		"not UTF-8":     "deploy\xff",
		"a wide space":  "deploy\u3000job",
		"a format char": "deploy\u200bjob",
	}
	for name, h := range bad {
		t.Run(name, func(t *testing.T) {
			check := func(call string, err error) {
				t.Helper()
				inv, ok := errors.AsType[*lock.InvalidError](err)
				if !ok || !errors.Is(err, lock.ErrInvalid) || !strings.EqualFold(inv.Field, "holder") {
					t.Errorf("%s = %v; want an *InvalidError naming the holder", call, err)
				}
			}
			check("Config.Validate", lock.Config{Holder: h}.Validate())
			m, err := lock.Open(t.Context(), lock.Config{Holder: h})
			if err == nil {
				_ = m.Close()
			}
			check("Open", err)
			m = newManager(t, openMemory(t), lock.WithHolder(h))
			check("Make", m.Make("k", time.Second).Err())
			check("Try", m.Try(t.Context(), "k", time.Second, noop))
			check("Block", m.Block(t.Context(), "k", time.Second, noop))
			check("TryAll", m.TryAll(t.Context(), []string{"k"}, time.Second, func(context.Context, []*lock.Lock) error { return nil }))
		})
	}
	for _, h := range []string{"deploy@host-3", "pid4242@host-3", "müller@höst", "job:7/step=2", strings.Repeat("h", lock.MaxHolderLen), ""} {
		if err := (lock.Config{Holder: h}).Validate(); err != nil {
			t.Errorf("Config{Holder: %q}.Validate() = %v; want nil", h, err)
		}
		m := newManager(t, openMemory(t), lock.WithHolder(h))
		var owner string
		if err := m.Try(t.Context(), "k", time.Second, func(_ context.Context, l *lock.Lock) error {
			owner = l.Owner()
			return nil
		}); err != nil {
			t.Errorf("WithHolder(%q): Try = %v; want nil", h, err)
		}
		if got := drivers.HolderOf(owner); h != "" && got != h {
			t.Errorf("WithHolder(%q): the owner says %q", h, got)
		}
	}
}
