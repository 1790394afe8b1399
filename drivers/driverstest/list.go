package driverstest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
)

// lister is the handle's drivers.Lister; the list case needs it.
func lister(t *testing.T, d drivers.Driver) drivers.Lister {
	t.Helper()
	l, ok := d.(drivers.Lister)
	if !ok {
		t.Fatalf("%T does not implement drivers.Lister", d)
	}
	return l
}

func mustList(t *testing.T, d drivers.Driver, prefix string, limit int) ([]drivers.Listed, bool) {
	t.Helper()
	locks, truncated, err := lister(t, d).ListHeld(ctxFor(t), prefix, limit)
	if err != nil {
		t.Fatalf("ListHeld(%q, %d): %v", prefix, limit, err)
	}
	return locks, truncated
}

func listedKeys(locks []drivers.Listed) []string {
	keys := make([]string, len(locks))
	for i, l := range locks {
		keys[i] = l.Key
	}
	return keys
}

// ListHeld, from another handle than the holders', finds the held names
// under a prefix sorted by key (mutexes, semaphores, both sides of
// read/write locks, a name with braces), each as Inspect describes it;
// it leaves out names outside the prefix, and grants past their deadline
// (a mutex's, and one holder of a semaphore whose other holders stay);
// limit cuts the list and says so.
func testListHeld(t *testing.T, s *suite) {
	a, b := s.driver(), s.driver()
	prefix := s.key("list") + "/"
	sem, rw, mtx, wr, brace := prefix+"a-sem", prefix+"b-rw", prefix+"c-mutex", prefix+"d-write", prefix+"e-{x}"
	gone := prefix + "f-expired"
	o := owners(8)

	mustShared(t, a, sem, o[0], semaphore(3), true)
	mustShared(t, a, sem, o[1], semaphore(3), true)
	mustShared(t, a, rw, o[2], readClaim, true)
	mustShared(t, a, rw, o[3], readClaim, true)
	mustAcquire(t, a, mtx, o[4], longTTL)
	mustShared(t, a, wr, o[5], writeClaim, true)
	mustAcquire(t, a, brace, o[6], longTTL)
	// Outside the prefix: a name that starts like it, and another test's.
	mustAcquire(t, a, strings.TrimSuffix(prefix, "/")+"x", o[4], longTTL)
	mustAcquire(t, a, s.key("list"), o[4], longTTL)
	// Grants that run out: a mutex, and a third holder of the semaphore.
	const short = 300 * time.Millisecond
	if _, ok, err := Take(ctxFor(t), a, gone, o[7], short); !ok || err != nil {
		t.Fatalf("Acquire(%q) = %v, %v", gone, ok, err)
	}
	if _, ok, _, err := TakeShared(ctxFor(t), sharer(t, a), sem, o[7], short, semaphore(3)); !ok || err != nil {
		t.Fatalf("AcquireShared(%q) = %v, %v", sem, ok, err)
	}
	// A writer queued behind the readers, where the backend shows its queue.
	wctx, cancel := context.WithCancel(ctxFor(t))
	defer cancel()
	waiting := startSharedWait(wctx, b, rw, token(), writeClaim)
	defer func() { cancel(); <-waiting }()
	awaitQueued(t, a, rw, 1)

	// The short grants end at the backend (read without changing it).
	deadline := time.Now().Add(10 * time.Second)
	for {
		held, err := b.Exists(ctxFor(t), gone)
		if err != nil {
			t.Fatal(err)
		}
		if !held && len(inspect(t, b, sem).Holders) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the %v grants never ran out: %q held %v, %q %+v", short, gone, held, sem, inspect(t, b, sem))
		}
		time.Sleep(20 * time.Millisecond) // waiting for a TTL to run out at the backend
	}

	want := []string{sem, rw, mtx, wr, brace}
	locks, truncated := mustList(t, b, prefix, 100)
	if got := listedKeys(locks); !slices.Equal(got, want) || truncated {
		t.Fatalf("ListHeld(%q, 100) = %q, truncated %v; want %q, not truncated", prefix, got, truncated, want)
	}
	for _, l := range locks {
		in := inspect(t, b, l.Key)
		if l.Claim != in.Claim || l.WaiterCount != in.WaiterCount || !slices.Equal(l.Waiters, in.Waiters) || len(l.Holders) != len(in.Holders) {
			t.Errorf("%q listed as %+v; Inspect says %+v", l.Key, l.Holding, in)
			continue
		}
		for i, h := range l.Holders {
			x := in.Holders[i]
			if h.Owner != x.Owner || h.Fence != x.Fence || h.Write != x.Write || h.Fence == 0 || h.Remaining <= 0 || h.Remaining > longTTL {
				t.Errorf("%q holder %d listed as %+v; Inspect says %+v", l.Key, i, h, x)
			}
		}
	}
	byKey := map[string]drivers.Holding{}
	for _, l := range locks {
		byKey[l.Key] = l.Holding
	}
	if h := byKey[sem]; h.Claim != semaphore(3) || len(h.Holders) != 2 || h.Holders[0].Owner != o[0] || h.Holders[1].Owner != o[1] {
		t.Errorf("semaphore listed as %+v; want a semaphore of 3 held by its two long grants", h)
	}
	if h := byKey[rw]; h.Claim.Kind != drivers.RWLock || len(h.Holders) != 2 || h.Holders[0].Write || h.WaiterCount != 1 {
		t.Errorf("read side listed as %+v; want two readers and a writer waiting", h)
	}
	if h := byKey[mtx]; h.Claim.Kind != drivers.Mutex || len(h.Holders) != 1 || h.Holders[0].Owner != o[4] {
		t.Errorf("mutex listed as %+v; want its holder", h)
	}
	if h := byKey[wr]; h.Claim.Kind != drivers.RWLock || len(h.Holders) != 1 || !h.Holders[0].Write {
		t.Errorf("write side listed as %+v; want one writer", h)
	}

	locks, truncated = mustList(t, b, prefix, 2)
	if got := listedKeys(locks); !slices.Equal(got, want[:2]) || !truncated {
		t.Errorf("ListHeld(%q, 2) = %q, truncated %v; want %q, truncated", prefix, got, truncated, want[:2])
	}
	locks, truncated = mustList(t, b, prefix, len(want))
	if got := listedKeys(locks); !slices.Equal(got, want) || truncated {
		t.Errorf("ListHeld(%q, %d) = %q, truncated %v; want all, not truncated", prefix, len(want), got, truncated)
	}
	locks, truncated = mustList(t, b, prefix+"c-", 100)
	if got := listedKeys(locks); !slices.Equal(got, []string{mtx}) || truncated {
		t.Errorf("ListHeld(%q, 100) = %q, truncated %v; want the mutex alone", prefix+"c-", got, truncated)
	}
	mustRelease(t, a, mtx, o[4], true)
	if locks, _ := mustList(t, b, prefix+"c-", 100); len(locks) != 0 {
		t.Errorf("ListHeld after the release = %q; want nothing", listedKeys(locks))
	}
}
