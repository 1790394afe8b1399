package lock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zerotal/lock"
)

// List checks its limit and prefix before the backend is asked, takes the
// Manager's prefix off every key (a key of another prefix is not listed),
// and says ErrUnsupported on a driver that cannot list, ErrClosed once
// the Manager is closed.
func TestManager_List(t *testing.T) {
	ctx := t.Context()
	m, err := lock.Open(ctx, lock.Config{Prefix: "app:"})
	if err != nil {
		t.Fatal(err)
	}
	other := lock.New(m.Driver(), lock.WithPrefix("other:"))
	for _, l := range []*lock.Lock{m.Make("a", time.Minute), m.Make("b", time.Minute), other.Make("a", time.Minute)} {
		if ok, err := l.Acquire(ctx); !ok || err != nil {
			t.Fatalf("Acquire: %v, %v", ok, err)
		}
	}
	locks, truncated, err := m.List(ctx, "", 10)
	if err != nil || truncated || len(locks) != 2 || locks[0].Key != "a" || locks[1].Key != "b" {
		t.Fatalf("List = %+v, %v, %v; want a and b without the prefix", locks, truncated, err)
	}
	if locks, truncated, err := m.List(ctx, "", 1); err != nil || !truncated || len(locks) != 1 {
		t.Fatalf("List of 1 = %+v, %v, %v; want a, truncated", locks, truncated, err)
	}
	for _, limit := range []int{0, -1, lock.MaxListLimit + 1} {
		if _, _, err := m.List(ctx, "", limit); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("List with limit %d: %v; want ErrInvalid", limit, err)
		}
	}
	if _, _, err := m.List(ctx, "\xff", 10); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("List of a prefix that is not UTF-8: %v; want ErrInvalid", err)
	}
	if _, _, err := lock.New(newFake()).List(ctx, "", 10); !errors.Is(err, lock.ErrUnsupported) {
		t.Errorf("List on a driver without drivers.Lister: %v; want ErrUnsupported", err)
	}
	_ = m.Close()
	if _, _, err := m.List(ctx, "", 10); !errors.Is(err, lock.ErrClosed) {
		t.Errorf("List after Close: %v; want ErrClosed", err)
	}
}
