package lock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/internal/testkit/poll"
	"github.com/zerotal/lock/internal/testkit/realbackends"
)

// TryAll takes every key or none: a key held elsewhere fails the call with
// that key's error, and the keys it took before are free again; the
// callback sees the locks in the order given, each with its fence.
func TestTryAll_AllOrNoneOnEveryBackend(t *testing.T) {
	onRealBackends(t, func(t *testing.T, name string, m *lock.Manager) {
		other := m.Make("b", time.Minute)
		mustAcquire(t, other)
		ran := false
		err := m.TryAll(t.Context(), []string{"c", "a", "b"}, time.Minute, func(context.Context, []*lock.Lock) error {
			ran = true
			return nil
		})
		na, ok := errors.AsType[*lock.NotAcquiredError](err)
		if !ok || na.Key != "b" || ran {
			t.Fatalf("TryAll with b held = %v (ran %v); want b's *NotAcquiredError and no callback", err, ran)
		}
		for _, k := range []string{"a", "c"} {
			if held, err := m.Exists(t.Context(), k); err != nil || held {
				t.Fatalf("%s after the failed TryAll: held %v, %v; want free", k, held, err)
			}
		}
		if err := other.Release(t.Context()); err != nil {
			t.Fatal(err)
		}

		err = m.TryAll(t.Context(), []string{"c", "a", "b", "a"}, time.Minute, func(ctx context.Context, locks []*lock.Lock) error {
			if len(locks) != 4 {
				t.Fatalf("%d locks; want one per key given", len(locks))
			}
			for i, k := range []string{"c", "a", "b", "a"} {
				if locks[i].Key() != k || locks[i].Fence() == 0 || !locks[i].IsAcquired() {
					t.Errorf("locks[%d] = %s fence %d held %v; want %s, held with a fence", i, locks[i].Key(), locks[i].Fence(), locks[i].IsAcquired(), k)
				}
				if err := m.Try(ctx, k, time.Second, noop); !errors.Is(err, lock.ErrNotAcquired) {
					t.Errorf("Try(%s) inside TryAll = %v; want not acquired", k, err)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"a", "b", "c"} {
			if held, err := m.Exists(t.Context(), k); err != nil || held {
				t.Fatalf("%s after TryAll: held %v, %v; want free", k, held, err)
			}
		}
	})
}

// Two callers that name the same keys in opposite orders, over and over,
// never deadlock and never hold the set together.
func TestBlockAll_OppositeOrdersNeverDeadlock(t *testing.T) {
	onRealBackends(t, func(t *testing.T, name string, m *lock.Manager) {
		var inside atomic.Int32
		var wg sync.WaitGroup
		errs := make(chan error, 2)
		for _, keys := range [][]string{{"x", "y", "z"}, {"z", "y", "x"}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 15 {
					err := m.BlockAll(t.Context(), keys, 10*time.Second, func(context.Context, []*lock.Lock) error {
						if inside.Add(1) != 1 {
							errs <- errors.New("two callers hold the set at once")
						}
						inside.Add(-1)
						return nil
					}, lock.WithTimeout(20*time.Second))
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Fatal("BlockAll in opposite orders did not finish in 60s: deadlock")
		}
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	})
}

// The loss of any one key ends the callback's context, naming that key; a
// BlockAll that runs out of time releases what it took.
func TestBlockAll_LossOfOneKeyEndsTheCallbackAndTimeoutReleases(t *testing.T) {
	m := realbackends.Open(t, lock.Config{})
	const ttl = 600 * time.Millisecond
	err := m.BlockAll(t.Context(), []string{"p", "q"}, ttl, func(ctx context.Context, _ []*lock.Lock) error {
		if err := m.Make("q", ttl).ForceRelease(t.Context()); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
			return errors.New("the callback was not told q was lost")
		}
		lost, ok := errors.AsType[*lock.LostError](context.Cause(ctx))
		if !ok || lost.Key != "q" {
			return errors.New("cause " + context.Cause(ctx).Error() + "; want q's *LostError")
		}
		return nil
	}, lock.WithRefresh())
	if !errors.Is(err, lock.ErrLost) {
		t.Fatalf("BlockAll = %v; want the loss reported", err)
	}

	busy := m.Make("s", time.Minute)
	mustAcquire(t, busy)
	err = m.BlockAll(t.Context(), []string{"r", "s"}, time.Minute, func(context.Context, []*lock.Lock) error { return nil },
		lock.WithTimeout(2*time.Second))
	if na, ok := errors.AsType[*lock.NotAcquiredError](err); !ok || na.Key != "s" {
		t.Fatalf("BlockAll past its timeout = %v; want s's *NotAcquiredError", err)
	}
	if held, _ := m.Exists(t.Context(), "r"); held {
		t.Fatal("r still held after the timed-out BlockAll")
	}
}

// Bad input is refused before anything is taken.
func TestTryAll_RefusesBadInput(t *testing.T) {
	m := realbackends.Open(t, lock.Config{})
	many := make([]string, lock.MaxMultiKeys+1)
	for i := range many {
		many[i] = strings.Repeat("k", i+1)
	}
	for name, call := range map[string]func() error{
		"no keys": func() error {
			return m.TryAll(t.Context(), nil, time.Minute, func(context.Context, []*lock.Lock) error { return nil })
		},
		"too many": func() error {
			return m.TryAll(t.Context(), many, time.Minute, func(context.Context, []*lock.Lock) error { return nil })
		},
		"empty key": func() error {
			return m.TryAll(t.Context(), []string{"a", ""}, time.Minute, func(context.Context, []*lock.Lock) error { return nil })
		},
		"nil fn": func() error { return m.TryAll(t.Context(), []string{"a"}, time.Minute, nil) },
		"zero ttl": func() error {
			return m.TryAll(t.Context(), []string{"a"}, 0, func(context.Context, []*lock.Lock) error { return nil })
		},
		"claim": func() error {
			return m.TryAll(t.Context(), []string{"a"}, time.Minute, func(context.Context, []*lock.Lock) error { return nil }, lock.Read())
		},
	} {
		if err := call(); !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("%s: %v; want ErrInvalid", name, err)
		}
	}
	if held, _ := m.Exists(t.Context(), "a"); held {
		t.Fatal("a refused TryAll took a key")
	}
}

// Where the backend takes the keys in one step, a TryAll that fails on a
// busy key never holds any of the others, not even for an instant: a
// caller taking one of those keys meanwhile always gets it. (The ordered
// fallback holds "a" while it tries "b": this test fails on it over
// SQLite, Redis and the cluster, where that window lasts a round trip.)
func TestTryAll_NeverHoldsPartOfTheSet(t *testing.T) {
	onRealBackends(t, func(t *testing.T, name string, m *lock.Manager) {
		other := m.Make("b", time.Minute)
		mustAcquire(t, other)
		const rounds = 300
		var wg sync.WaitGroup
		var refused atomic.Int64
		wg.Go(func() {
			for range rounds {
				err := m.TryAll(t.Context(), []string{"a", "b"}, time.Minute, func(context.Context, []*lock.Lock) error { return nil })
				if !errors.Is(err, lock.ErrNotAcquired) {
					t.Errorf("TryAll with b held = %v, want not acquired", err)
					return
				}
			}
		})
		wg.Go(func() {
			for range rounds {
				if err := m.Try(t.Context(), "a", time.Minute, noop); errors.Is(err, lock.ErrNotAcquired) {
					refused.Add(1)
				} else if err != nil {
					t.Errorf("Try(a) = %v", err)
					return
				}
			}
		})
		wg.Wait()
		if n := refused.Load(); n > 0 {
			t.Fatalf("Try(a) was refused %d times in %d: a failed TryAll held a", n, rounds)
		}
	})
}

// On a backend that waits for a whole set (drivers.Capabilities.SetWait: memory
// and the cluster), a BlockAll keeps its place on every key from the
// moment it comes: with "a" held elsewhere, it takes "b" at once, so a
// later Block of "b" waits for it instead of overtaking it. (Waiting for
// the keys one at a time in sorted order, it would wait for "a" holding
// nothing, and the later Block would get "b" first: this test fails on
// that.)
func TestBlockAll_FirstComeFirstServedForTheWholeSet(t *testing.T) {
	onRealBackends(t, func(t *testing.T, name string, m *lock.Manager) {
		if !m.Driver().Capabilities().SetWait {
			t.Skipf("%s waits for the keys one at a time (no drivers.Capabilities.SetWait)", name)
		}
		firstComeFirstServed(t, m)
	})
}

func firstComeFirstServed(t *testing.T, m *lock.Manager) {
	ctx := t.Context()
	insp := m.Driver().(drivers.Inspector)
	waiting := func(key string) int {
		h, _, err := insp.Inspect(ctx, m.Prefix()+key)
		if err != nil {
			t.Fatal(err)
		}
		return h.WaiterCount
	}
	holder := m.Make("a", time.Minute)
	if ok, err := holder.Acquire(ctx); !ok || err != nil {
		t.Fatal(ok, err)
	}
	events := make(chan string, 4)
	setDone := make(chan error, 1)
	go func() {
		setDone <- m.BlockAll(ctx, []string{"b", "a"}, time.Minute, func(ctx context.Context, locks []*lock.Lock) error {
			events <- "set"
			return nil
		}, lock.WithTimeout(30*time.Second))
	}()
	poll.Until(t, 5*time.Second, "the set to wait for a", func() bool { return waiting("a") == 1 })
	if held, err := m.Exists(ctx, "b"); err != nil || !held {
		t.Fatalf("b while the set waits for a: held %v, %v; want the set's", held, err)
	}
	laterDone := make(chan error, 1)
	go func() {
		laterDone <- m.Block(ctx, "b", time.Minute, func(context.Context, *lock.Lock) error {
			events <- "later"
			return nil
		}, lock.WithTimeout(30*time.Second))
	}()
	poll.Until(t, 5*time.Second, "the later Block to wait for b", func() bool { return waiting("b") == 1 })
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-setDone; err != nil {
		t.Fatal(err)
	}
	if err := <-laterDone; err != nil {
		t.Fatal(err)
	}
	if first, second := <-events, <-events; first != "set" || second != "later" {
		t.Fatalf("served %s then %s; want the set first, as it came first", first, second)
	}
}

// A BlockAll whose timeout passes says which key it still waited for and
// who holds it, and leaves none of the keys it took held.
func TestBlockAll_TimeoutNamesTheKeyAndLeavesNothing(t *testing.T) {
	onRealBackends(t, func(t *testing.T, name string, m *lock.Manager) {
		other := m.Make("a", time.Minute)
		mustAcquire(t, other)
		err := m.BlockAll(t.Context(), []string{"c", "a", "b"}, time.Minute, func(context.Context, []*lock.Lock) error {
			t.Error("the callback ran")
			return nil
			// Long enough for a loaded machine to answer the wait at
			// least once: a wait that never heard "held" is not
			// contention, and says so.
		}, lock.WithTimeout(2*time.Second))
		na, ok := errors.AsType[*lock.NotAcquiredError](err)
		if !ok || na.Key != "a" || na.Holder == "" {
			t.Fatalf("BlockAll with a held = %v; want a's *NotAcquiredError naming its holder", err)
		}
		for _, k := range []string{"b", "c"} {
			poll.Until(t, 5*time.Second, k+" to be free", func() bool {
				held, err := m.Exists(t.Context(), k)
				return err == nil && !held
			})
		}
	})
}
