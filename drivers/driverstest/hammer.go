package driverstest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
)

// exclusion is the in-test referee: it records who holds each key and the
// fences in the order the critical sections ran.
type exclusion struct {
	mu         sync.Mutex
	holder     map[string]string
	lastFence  map[string]uint64
	violations []string
	grants     atomic.Int64
}

func newExclusion() *exclusion {
	return &exclusion{holder: map[string]string{}, lastFence: map[string]uint64{}}
}

func (x *exclusion) enter(key, owner string, fence uint64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.grants.Add(1)
	if h, busy := x.holder[key]; busy {
		x.violations = append(x.violations, fmt.Sprintf("%s granted to %s while %s held it", key, owner[:8], h[:8]))
	}
	x.holder[key] = owner
	if last := x.lastFence[key]; fence != 0 && fence <= last {
		x.violations = append(x.violations, fmt.Sprintf("%s fence %d after %d", key, fence, last))
	}
	x.lastFence[key] = fence
}

func (x *exclusion) leave(key, owner string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.holder[key] == owner {
		delete(x.holder, key)
	}
}

func (x *exclusion) check(t *testing.T) {
	t.Helper()
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.violations) > 0 {
		t.Fatalf("%d exclusion violations, first ones: %v", len(x.violations), x.violations[:min(5, len(x.violations))])
	}
	if x.grants.Load() == 0 {
		t.Fatal("hammer made no grant at all")
	}
	t.Logf("%d grants, 0 violations", x.grants.Load())
}

// testHammer runs try-acquire loops from two handles on a few keys.
func testHammer(t *testing.T, s *suite) {
	handles := []drivers.Driver{s.driver(), s.driver()}
	keys := []string{s.key("h0"), s.key("h1"), s.key("h2")}
	x := newExclusion()
	const perHandle, rounds = 6, 150
	stop := time.Now().Add(4 * time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, len(handles)*perHandle)
	for hi, d := range handles {
		for w := 0; w < perHandle; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < rounds && time.Now().Before(stop); i++ {
					key := keys[(hi+w+i)%len(keys)]
					owner := token()
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					fence, ok, err := Take(ctx, d, key, owner, longTTL)
					if err != nil {
						cancel()
						errs <- fmt.Errorf("Acquire: %w", err)
						return
					}
					if ok {
						x.enter(key, owner, fence)
						x.leave(key, owner)
						released, err := d.Release(ctx, key, owner)
						if errors.Is(err, drivers.ErrNoLongerHeld) {
							// A retried release after an attempt that got no
							// answer in time (a loaded machine): the owner
							// holds the key no more, which is what the
							// contract promises then.
							released, err = true, nil
						}
						if err != nil || !released {
							cancel()
							errs <- fmt.Errorf("Release = %v, %v; want true", released, err)
							return
						}
					}
					cancel()
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	x.check(t)
}

// testHammerWaiters makes every worker wait for one key until it gets it.
func testHammerWaiters(t *testing.T, s *suite) {
	handles := []drivers.Driver{s.driver(), s.driver()}
	for _, d := range handles {
		waiter(t, d)
	}
	key := s.key("hot")
	x := newExclusion()
	const perHandle, rounds = 3, 15
	var wg sync.WaitGroup
	errs := make(chan error, len(handles)*perHandle)
	for _, d := range handles {
		w := d
		for i := 0; i < perHandle; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := 0; r < rounds; r++ {
					owner := token()
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					fence, err := TakeWait(ctx, w, key, owner, longTTL, waitOpts)
					if err != nil {
						cancel()
						errs <- fmt.Errorf("AcquireWait (round %d): %w", r, err)
						return
					}
					x.enter(key, owner, fence)
					x.leave(key, owner)
					released, err := d.Release(ctx, key, owner)
					cancel()
					if err != nil || !released {
						errs <- fmt.Errorf("Release = %v, %v; want true", released, err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	x.check(t)
	if got, want := x.grants.Load(), int64(len(handles)*perHandle*rounds); got != want {
		t.Fatalf("%d grants, want %d: a waiter starved", got, want)
	}
}
