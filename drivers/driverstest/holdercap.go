package driverstest

import (
	"errors"
	"sync"
	"testing"

	"github.com/zerotal/lock/drivers"
)

// testHolderCap: a read/write lock lets in at most drivers.MaxHolders
// readers, and the next meets a busy key (refused as contention, as at a
// full semaphore); a semaphore above drivers.MaxHolders is invalid. The
// readers come from a few goroutines at once, so a networked backend
// takes them in a bounded time.
func testHolderCap(t *testing.T, s *suite) {
	d := s.driver()
	sh := sharer(t, d)
	key, o := s.key("cap"), owners(drivers.MaxHolders+1)
	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < drivers.MaxHolders; i += workers {
				if _, ok, _, err := TakeShared(ctxFor(t), sh, key, o[i], longTTL, readClaim); err != nil || !ok {
					errs <- errors.Join(err, errors.New("a reader below the cap was not let in"))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	mustShared(t, d, key, o[drivers.MaxHolders], readClaim, false)
	if h := inspect(t, d, key); len(h.Holders) != drivers.MaxHolders {
		t.Fatalf("%d holders, want drivers.MaxHolders (%d)", len(h.Holders), drivers.MaxHolders)
	}
	if _, ok, _, err := TakeShared(ctxFor(t), sh, s.key("sem"), o[0], longTTL, semaphore(drivers.MaxHolders+1)); ok || !errors.Is(err, drivers.ErrInvalid) {
		t.Fatalf("a semaphore of drivers.MaxHolders+1 = %v, %v; want ErrInvalid", ok, err)
	}
}
