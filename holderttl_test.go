package lock_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/drivers/memory"
	"github.com/zerotal/lock/internal/testkit/realbackends"
)

// onRealBackends runs check on each of the four backends (see
// realbackends.Each); -short skips it, as they are real processes and files.
func onRealBackends(t *testing.T, check func(t *testing.T, name string, m *lock.Manager)) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real backends")
	}
	realbackends.Each(t, realbackends.All(), check)
}

// What the backend knows of the holder reaches the caller: a Try or a
// timed-out Block says how long the holder's grant has left, on every
// backend; and a handle keeps its last fence after it released.
func TestNotAcquired_CarriesTheHolderTTLOnEveryBackend(t *testing.T) {
	onRealBackends(t, func(t *testing.T, name string, m *lock.Manager) {
		const ttl = 30 * time.Second
		holder := m.Make("busy", ttl)
		mustAcquire(t, holder)
		check := func(call string, err error) {
			t.Helper()
			na, ok := errors.AsType[*lock.NotAcquiredError](err)
			if !ok {
				t.Fatalf("%s = %v; want a *NotAcquiredError", call, err)
			}
			if na.HolderTTL < ttl/2 || na.HolderTTL > ttl {
				t.Errorf("%s: HolderTTL %v; want the holder's time left, in (%v, %v]", call, na.HolderTTL, ttl/2, ttl)
			}
		}
		check("Try", m.Try(t.Context(), "busy", time.Second, noop))
		check("Block", m.Block(t.Context(), "busy", time.Second, noop, lock.WithTimeout(2*time.Second)))
		check("Lock.Block", m.Make("busy", time.Second).Block(t.Context(), 2*time.Second))

		fence := holder.Fence()
		if err := holder.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
		if holder.IsAcquired() || holder.Fence() != fence || fence == 0 {
			t.Errorf("after Release: acquired %v, fence %d; want false and the last grant's fence %d", holder.IsAcquired(), holder.Fence(), fence)
		}
		var inside uint64
		if err := m.Try(context.Background(), "busy", time.Second, func(_ context.Context, l *lock.Lock) error {
			inside = l.Fence()
			return nil
		}); err != nil || inside <= fence {
			t.Errorf("the next grant: %v, fence %d; want a fence above %d", err, inside, fence)
		}
	})
}

// A refused acquire says who holds the key, as the holder's Manager
// describes itself (the process id and host by default, WithHolder
// otherwise), on every backend, and never carries the holder's token.
func TestNotAcquired_SaysWhoHoldsItOnEveryBackend(t *testing.T) {
	host, _ := os.Hostname()
	want := "pid" + strconv.Itoa(os.Getpid()) + "@" + host
	onRealBackends(t, func(t *testing.T, name string, m *lock.Manager) {
		holder := m.Make("who", 30*time.Second)
		mustAcquire(t, holder)
		token, _, _ := strings.Cut(holder.Owner(), ":")
		for call, err := range map[string]error{
			"Try":   m.Try(t.Context(), "who", time.Second, noop),
			"Block": m.Block(t.Context(), "who", time.Second, noop, lock.WithTimeout(2*time.Second)),
		} {
			na, ok := errors.AsType[*lock.NotAcquiredError](err)
			if !ok || na.Holder != want || !strings.Contains(err.Error(), want) {
				t.Fatalf("%s = %v; want a *NotAcquiredError naming %q", call, err, want)
			}
			if strings.Contains(err.Error(), token) || strings.Contains(na.Holder, token) {
				t.Fatalf("%s: the error carries the holder's token %s: %v", call, token, err)
			}
		}
		// GET /v1/lock shows it too.
		if g, ok := m.Driver().(interface {
			Get(context.Context, string) (api.Lock, bool, error)
		}); ok {
			l, found, err := g.Get(t.Context(), m.Prefix()+"who")
			if err != nil || !found || l.Holder != want {
				t.Fatalf("Get = %+v, %v, %v; want holder %q", l, found, err, want)
			}
		} else if name == "cluster" {
			t.Fatalf("the cluster driver %T has no Get", m.Driver())
		}
		_ = holder.Release(t.Context())
	})
}

// WithHolder replaces the description, and "" leaves it out. (One that
// is not UTF-8 or longer than MaxHolderLen is refused, not mended:
// TestHolder_BadDescriptionsAreInvalid.)
func TestWithHolder_DescribesTheGrants(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ give, want string }{
		{"deploy@host-3", "deploy@host-3"},
		{"", ""},
		{strings.Repeat("x", lock.MaxHolderLen), strings.Repeat("x", lock.MaxHolderLen)},
	} {
		d, err := memory.New(memory.Config{})
		if err != nil {
			t.Fatal(err)
		}
		m := lock.New(d, lock.WithHolder(tc.give))
		held := m.Make("k", time.Minute)
		mustAcquire(t, held)
		na, _ := errors.AsType[*lock.NotAcquiredError](m.Try(t.Context(), "k", time.Second, noop))
		if na == nil || na.Holder != tc.want {
			t.Errorf("WithHolder(%.20q): holder %v; want %.20q", tc.give, na, tc.want)
		}
		_ = m.Close()
	}
}
