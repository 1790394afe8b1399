package driverstest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
)

// RunShared runs the conformance sections of semaphores and read/write
// locks (drivers.Capabilities.Shared, drivers.Inspector), and the list of held names
// (drivers.Lister), on handles of newHarness's backend. A driver that
// implements them calls it beside Run.
func RunShared(t *testing.T, newHarness func(t *testing.T) Harness) {
	t.Helper()
	runSections(t, newHarness, []section{
		{"InspectMutex", testInspectMutex},
		{"SemaphoreLimitAndFences", testSemaphoreLimitAndFences},
		{"SemaphoreFIFO", testSemaphoreFIFO},
		{"KindAndLimitMismatch", testKindAndLimitMismatch},
		{"RWReadersShareWriterAlone", testRWReadersShareWriterAlone},
		{"RWWaitingWriterStopsNewReaders", testRWWaitingWriterStopsNewReaders},
		{"HolderCap", testHolderCap},
		{"SharedRefusalNamesTheHolderInTheWay", testSharedRefusalNamesTheHolderInTheWay},
		{"SharedRefreshAndExpiryPerHolder", testSharedRefreshAndExpiryPerHolder},
		{"ListHeld", testListHeld},
		{"SemaphoreHammer", testSemaphoreHammer},
		{"RWHammer", testRWHammer},
	})
}

var (
	readClaim  = drivers.Claim{Kind: drivers.RWLock}
	writeClaim = drivers.Claim{Kind: drivers.RWLock, Write: true}
)

func semaphore(n uint32) drivers.Claim { return drivers.Claim{Kind: drivers.Semaphore, Limit: n} }

// sharer is d, which the suite needs to serve shared claims.
func sharer(t *testing.T, d drivers.Driver) drivers.Driver {
	t.Helper()
	if !d.Capabilities().Shared {
		t.Fatalf("%T does not declare drivers.Capabilities.Shared", d)
	}
	return d
}

func mustShared(t *testing.T, d drivers.Driver, key, owner string, c drivers.Claim, want bool) uint64 {
	t.Helper()
	fence, ok, _, err := TakeShared(ctxFor(t), sharer(t, d), key, owner, longTTL, c)
	if err != nil || ok != want {
		t.Fatalf("AcquireShared(%q, %s, %v) = %d, %v, %v; want ok=%v", key, owner[:8], c, fence, ok, err, want)
	}
	return fence
}

func startSharedWait(ctx context.Context, d drivers.Driver, key, owner string, c drivers.Claim) <-chan waitResult {
	done := make(chan waitResult, 1)
	go func() {
		f, err := TakeSharedWait(ctx, d, key, owner, longTTL, c, waitOpts)
		done <- waitResult{fence: f, err: err, at: time.Now()}
	}()
	return done
}

// inspect describes key through the handle's drivers.Inspector.
func inspect(t *testing.T, d drivers.Driver, key string) drivers.Holding {
	t.Helper()
	in, ok := d.(drivers.Inspector)
	if !ok {
		t.Fatalf("%T does not implement drivers.Inspector", d)
	}
	h, _, err := in.Inspect(ctxFor(t), key)
	if err != nil {
		t.Fatalf("Inspect(%q): %v", key, err)
	}
	return h
}

// awaitQueued waits until key's queue holds n waiters (bounded).
func awaitQueued(t *testing.T, d drivers.Driver, key string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for inspect(t, d, key).WaiterCount != n {
		if time.Now().After(deadline) {
			t.Fatalf("%q never had %d waiters: %+v", key, n, inspect(t, d, key))
		}
		time.Sleep(5 * time.Millisecond) // polling a backend's state, not synchronising goroutines
	}
}

func mustGet(t *testing.T, done <-chan waitResult) uint64 {
	t.Helper()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("AcquireSharedWait: %v", r.err)
		}
		return r.fence
	case <-time.After(10 * time.Second):
		t.Fatal("AcquireSharedWait never returned")
	}
	return 0
}

func owners(n int) []string {
	o := make([]string, n)
	for i := range o {
		o[i] = token()
	}
	return o
}

// Inspect of a held mutex names its holder with the grant's fence (what
// an election reports as the leader's term) and its time left, as seen
// from another handle; a refresh keeps the fence, a new grant raises it.
func testInspectMutex(t *testing.T, s *suite) {
	a, b := s.driver(), s.driver()
	key := s.key("inspected")
	if h := inspect(t, b, key); len(h.Holders) != 0 {
		t.Fatalf("Inspect of a free key: %+v; want no holder", h)
	}
	for i, owner := range owners(2) {
		fence, ok, err := Take(ctxFor(t), a, key, owner, longTTL)
		if err != nil || !ok {
			t.Fatalf("Acquire: %v, %v", ok, err)
		}
		if _, _, err := Take(ctxFor(t), a, key, owner, longTTL); err != nil { // a refresh
			t.Fatal(err)
		}
		h := inspect(t, b, key)
		if h.Claim != (drivers.Claim{}) || len(h.Holders) != 1 {
			t.Fatalf("grant %d: Inspect = %+v; want one mutex holder", i, h)
		}
		got := h.Holders[0]
		if got.Owner != owner || got.Fence != fence || got.Remaining <= 0 || got.Remaining > longTTL {
			t.Fatalf("grant %d: holder %+v; want owner %s, fence %d, time left in (0, %v]", i, got, owner, fence, longTTL)
		}
		if ok, err := a.Release(ctxFor(t), key, owner); err != nil || !ok {
			t.Fatalf("Release: %v, %v", ok, err)
		}
	}
}

func testSemaphoreLimitAndFences(t *testing.T, s *suite) {
	a, b := s.driver(), s.driver()
	key, o := s.key("sem"), owners(4)
	var fences []uint64
	for i, d := range []drivers.Driver{a, b, a} {
		fences = append(fences, mustShared(t, d, key, o[i], semaphore(3), true))
	}
	if !slices.IsSorted(fences) || fences[0] == fences[1] || fences[1] == fences[2] {
		t.Fatalf("three grants of one semaphore got fences %v; want strictly increasing", fences)
	}
	mustShared(t, b, key, o[3], semaphore(3), false)
	if again := mustShared(t, a, key, o[0], semaphore(3), true); again != fences[0] {
		t.Fatalf("a holder's refresh moved its fence from %d to %d", fences[0], again)
	}
	h := inspect(t, b, key)
	if h.Claim != semaphore(3) || len(h.Holders) != 3 {
		t.Fatalf("Inspect = %+v; want a semaphore of 3 with 3 holders", h)
	}
	mustRelease(t, b, key, o[1], true)
	if f := mustShared(t, b, key, o[3], semaphore(3), true); f <= fences[2] {
		t.Fatalf("the grant after a release got fence %d, not above %d", f, fences[2])
	}
	mustExist(t, a, key, true)
	for _, owner := range []string{o[0], o[2], o[3]} {
		mustRelease(t, a, key, owner, true)
	}
	mustExist(t, a, key, false)
}

func testSemaphoreFIFO(t *testing.T, s *suite) {
	a, b := s.driver(), s.driver()
	key, o := s.key("semfifo"), owners(5)
	mustShared(t, a, key, o[0], semaphore(2), true)
	mustShared(t, a, key, o[1], semaphore(2), true)
	ctx := ctxFor(t)
	first := startSharedWait(ctx, b, key, o[2], semaphore(2))
	awaitQueued(t, a, key, 1)
	second := startSharedWait(ctx, a, key, o[3], semaphore(2))
	awaitQueued(t, a, key, 2)
	// A newcomer without wait does not overtake the queue.
	mustShared(t, b, key, o[4], semaphore(2), false)
	if w := inspect(t, a, key).Waiters; len(w) != 2 || w[0].Owner != o[2] || w[1].Owner != o[3] {
		t.Fatalf("waiters %+v; want %s then %s", w, o[2][:8], o[3][:8])
	}
	mustRelease(t, a, key, o[0], true)
	f2 := mustGet(t, first)
	stillWaiting(t, second)
	mustRelease(t, a, key, o[1], true)
	if f3 := mustGet(t, second); f3 <= f2 {
		t.Fatalf("the second waiter's fence %d is not above the first's %d", f3, f2)
	}
}

func testKindAndLimitMismatch(t *testing.T, s *suite) {
	a, b := s.driver(), s.driver()
	key, other := s.key("kind"), s.key("mutex")
	mustShared(t, a, key, token(), semaphore(2), true)
	for _, c := range []drivers.Claim{semaphore(3), readClaim, writeClaim} {
		_, ok, _, err := TakeShared(ctxFor(t), sharer(t, b), key, token(), longTTL, c)
		if ok || !errors.Is(err, drivers.ErrInvalid) {
			t.Fatalf("AcquireShared as %v of a semaphore of 2 = %v, %v; want ErrInvalid", c, ok, err)
		}
	}
	if _, ok, err := Take(ctxFor(t), b, key, token(), longTTL); ok || !errors.Is(err, drivers.ErrInvalid) {
		t.Fatalf("a mutex Acquire of a semaphore = %v, %v; want ErrInvalid", ok, err)
	}
	mustAcquire(t, a, other, token(), longTTL)
	if _, ok, _, err := TakeShared(ctxFor(t), sharer(t, b), other, token(), longTTL, readClaim); ok || !errors.Is(err, drivers.ErrInvalid) {
		t.Fatalf("a read of a mutex = %v, %v; want ErrInvalid", ok, err)
	}
	if _, ok, _, err := TakeShared(ctxFor(t), sharer(t, b), key, token(), longTTL, semaphore(0)); ok || !errors.Is(err, drivers.ErrInvalid) {
		t.Fatalf("a semaphore of 0 = %v, %v; want ErrInvalid", ok, err)
	}
}

func testRWReadersShareWriterAlone(t *testing.T, s *suite) {
	a, b := s.driver(), s.driver()
	key, o := s.key("rw"), owners(5)
	r1 := mustShared(t, a, key, o[0], readClaim, true)
	r2 := mustShared(t, b, key, o[1], readClaim, true)
	if r2 <= r1 {
		t.Fatalf("reader fences %d then %d", r1, r2)
	}
	mustShared(t, b, key, o[2], writeClaim, false)
	mustRelease(t, a, key, o[0], true)
	mustRelease(t, b, key, o[1], true)
	w := mustShared(t, b, key, o[2], writeClaim, true)
	if w <= r2 {
		t.Fatalf("the writer's fence %d is not above the readers' %d", w, r2)
	}
	if h := inspect(t, a, key); len(h.Holders) != 1 || !h.Holders[0].Write {
		t.Fatalf("Inspect = %+v; want one writer", h)
	}
	mustShared(t, a, key, o[3], readClaim, false)
	mustShared(t, a, key, o[4], writeClaim, false)
	if _, ok, _, err := TakeShared(ctxFor(t), sharer(t, b), key, o[2], longTTL, readClaim); ok || !errors.Is(err, drivers.ErrInvalid) {
		t.Fatalf("the writer asking for the read side = %v, %v; want ErrInvalid", ok, err)
	}
}

func testRWWaitingWriterStopsNewReaders(t *testing.T, s *suite) {
	a, b := s.driver(), s.driver()
	key, o := s.key("rwfifo"), owners(5)
	r1 := mustShared(t, a, key, o[0], readClaim, true)
	ctx := ctxFor(t)
	writer := startSharedWait(ctx, b, key, o[1], writeClaim)
	awaitQueued(t, a, key, 1)
	mustShared(t, a, key, o[2], readClaim, false) // the waiting writer comes first
	late1 := startSharedWait(ctx, a, key, o[3], readClaim)
	late2 := startSharedWait(ctx, b, key, o[4], readClaim)
	awaitQueued(t, a, key, 3)
	stillWaiting(t, writer)
	mustRelease(t, a, key, o[0], true)
	w := mustGet(t, writer)
	if w <= r1 {
		t.Fatalf("writer fence %d after reader %d", w, r1)
	}
	stillWaiting(t, late1)
	mustRelease(t, b, key, o[1], true)
	// Both readers are let in by the writer's one release.
	f3, f4 := mustGet(t, late1), mustGet(t, late2)
	if f3 <= w || f4 <= w || f3 == f4 {
		t.Fatalf("readers after the writer got fences %d, %d (writer %d)", f3, f4, w)
	}
	if h := inspect(t, a, key); len(h.Holders) != 2 {
		t.Fatalf("Inspect = %+v; want the two readers", h)
	}
}

func testSharedRefreshAndExpiryPerHolder(t *testing.T, s *suite) {
	a, b := s.driver(), s.driver()
	x := extender(t, a)
	key, o := s.key("semttl"), owners(3)
	// Short, but long enough for the three calls below on a loaded
	// machine: they must find o[0] still holding its slot.
	if _, ok, _, err := TakeShared(ctxFor(t), sharer(t, a), key, o[0], 2*time.Second, semaphore(2)); !ok || err != nil {
		t.Fatalf("AcquireShared = %v, %v", ok, err)
	}
	mustShared(t, b, key, o[1], semaphore(2), true)
	mustExtend(t, x, key, o[1], longTTL, true)
	mustExtend(t, x, key, o[2], longTTL, false)
	mustShared(t, b, key, o[2], semaphore(2), false)
	// The short grant runs out on its own; the other holder keeps its slot.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, ok, _, err := TakeShared(ctxFor(t), sharer(t, b), key, o[2], longTTL, semaphore(2))
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the expired holder's slot never freed")
		}
		time.Sleep(20 * time.Millisecond) // waiting for a TTL to run out at the backend
	}
	mustExtend(t, x, key, o[0], longTTL, false)
	mustRelease(t, a, key, o[1], true)
}

// sharedReferee checks the promises from the holders' side: at most limit
// at once, a writer alone, fences unique, a writer's above every grant
// before it and every grant after a writer above it.
type sharedReferee struct {
	mu         sync.Mutex
	limit      int
	holders    map[string]bool // owner -> write
	seen       map[uint64]bool
	maxFence   uint64
	lastWriter uint64
	grants     int
	violations []string
}

func newSharedReferee(limit int) *sharedReferee {
	return &sharedReferee{limit: limit, holders: map[string]bool{}, seen: map[uint64]bool{}}
}

func (r *sharedReferee) enter(owner string, fence uint64, write bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.grants++
	bad := func(format string, args ...any) { r.violations = append(r.violations, fmt.Sprintf(format, args...)) }
	for _, w := range r.holders {
		if w || write {
			bad("a writer beside another holder (fence %d, write %v)", fence, write)
			break
		}
	}
	if r.limit > 0 && len(r.holders) >= r.limit {
		bad("%d holders with limit %d", len(r.holders)+1, r.limit)
	}
	if r.seen[fence] {
		bad("fence %d granted twice", fence)
	}
	if write && fence <= r.maxFence {
		bad("writer fence %d not above %d", fence, r.maxFence)
	}
	if fence <= r.lastWriter {
		bad("fence %d not above the last writer's %d", fence, r.lastWriter)
	}
	r.seen[fence] = true
	r.maxFence = max(r.maxFence, fence)
	if write {
		r.lastWriter = fence
	}
	r.holders[owner] = write
}

func (r *sharedReferee) leave(owner string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.holders, owner)
}

func (r *sharedReferee) check(t *testing.T, want int) {
	t.Helper()
	if len(r.violations) > 0 {
		t.Fatalf("%d violations, first ones: %v", len(r.violations), r.violations[:min(5, len(r.violations))])
	}
	if r.grants != want {
		t.Fatalf("%d grants, want %d: a waiter starved", r.grants, want)
	}
	t.Logf("%d grants, 0 violations", r.grants)
}

// hammerShared has workers on two handles wait for key with claimOf(i)
// and release it, rounds times each.
func hammerShared(t *testing.T, s *suite, key string, workers, rounds int, ref *sharedReferee, claimOf func(i int) drivers.Claim) {
	handles := []drivers.Driver{s.driver(), s.driver()}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := range workers {
		d := handles[i%2]
		sh := sharer(t, d)
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := claimOf(i)
			for range rounds {
				owner := token()
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				fence, err := TakeSharedWait(ctx, sh, key, owner, longTTL, c, waitOpts)
				if err != nil {
					cancel()
					errs <- fmt.Errorf("AcquireSharedWait %v: %w", c, err)
					return
				}
				ref.enter(owner, fence, c.Write)
				ref.leave(owner)
				ok, err := d.Release(ctx, key, owner)
				cancel()
				if err != nil || !ok {
					errs <- fmt.Errorf("Release = %v, %v; want true", ok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func testSemaphoreHammer(t *testing.T, s *suite) {
	const workers, rounds = 8, 15
	ref := newSharedReferee(3)
	hammerShared(t, s, s.key("semhammer"), workers, rounds, ref, func(int) drivers.Claim { return semaphore(3) })
	ref.check(t, workers*rounds)
}

func testRWHammer(t *testing.T, s *suite) {
	const workers, rounds = 8, 15
	ref := newSharedReferee(0)
	hammerShared(t, s, s.key("rwhammer"), workers, rounds, ref, func(i int) drivers.Claim {
		if i%4 == 0 {
			return writeClaim
		}
		return readClaim
	})
	ref.check(t, workers*rounds)
}
