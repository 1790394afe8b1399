// Package fencetest checks a fence.Store: the same checks for every store
// and every SQL dialect, so that a dialect tested in a module of its own
// (MySQL, whose database/sql driver this module does not depend on) runs
// them too.
//
//	fencetest.Admission(t, store)
//	fencetest.Concurrent(t, fencetest.SQL(t, db, fence.PostgreSQL, createLog, insertLog))
package fencetest

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerotal/lock/fence"
)

// Store is a fence.Store that says what it recorded, as Memory and DB do.
type Store interface {
	fence.Store
	Highest(ctx context.Context, resource string) (uint64, error)
}

// Admission checks the rule on one resource: a fence is admitted when it
// is not below the highest recorded (the same one again too), is recorded
// only when the guarded work succeeds, and is refused with a *StaleError
// naming the highest; fence 0 and fences above fence.MaxFence are invalid.
func Admission(t *testing.T, s Store) {
	t.Helper()
	ctx := t.Context()
	ran := 0
	work := func(context.Context) error { ran++; return nil }
	boom := errors.New("boom")
	fail := func(context.Context) error { return boom }
	for _, step := range []struct {
		fence   uint64
		fn      func(context.Context) error
		want    error
		highest uint64 // recorded after the step
	}{
		{5, work, nil, 5},
		{5, work, nil, 5},            // one holder writes again
		{4, work, fence.ErrStale, 5}, // an older holder
		{9, fail, boom, 5},           // failed work records nothing
		{7, work, nil, 7},
		{0, work, fence.ErrInvalid, 7},
		{fence.MaxFence + 1, work, fence.ErrInvalid, 7},
	} {
		before := ran
		err := s.Guard(ctx, "doc", step.fence, step.fn)
		if !errors.Is(err, step.want) || (step.want == nil) != (err == nil) {
			t.Fatalf("fence %d: %v, want %v", step.fence, err, step.want)
		}
		if (errors.Is(err, fence.ErrStale) || errors.Is(err, fence.ErrInvalid)) && ran != before {
			t.Fatalf("fence %d: refused, yet the work ran", step.fence)
		}
		var stale *fence.StaleError
		if errors.As(err, &stale) && (stale.Resource != "doc" || stale.Fence != step.fence || stale.Highest != step.highest) {
			t.Fatalf("fence %d: %+v", step.fence, stale)
		}
		if h, err := s.Highest(ctx, "doc"); err != nil || h != step.highest {
			t.Fatalf("after fence %d: highest %d %v, want %d", step.fence, h, err, step.highest)
		}
	}
	if h, err := s.Highest(ctx, "unseen"); err != nil || h != 0 {
		t.Errorf("a resource never written: highest %d %v, want 0", h, err)
	}
}

// Guarded is a Store whose guarded work appends the fence to a log that
// commits with it.
type Guarded struct {
	Store  Store
	Append func(ctx context.Context, fence uint64) error // the guarded work
	Log    func(t *testing.T) []uint64                   // what committed, in commit order
}

// SQL is a Guarded of a DB on db: create makes a log table whose ids
// follow the order of its inserts (id, fence), and insert, with the
// dialect's placeholder, adds a fence to it in the guard's transaction.
// Its ids are in commit order, since the guard's row lock is held from
// before the insert until the commit.
func SQL(t *testing.T, db *sql.DB, d fence.Dialect, create, insert string) Guarded {
	t.Helper()
	g, err := fence.NewDB(db, fence.DBConfig{Dialect: d})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.CreateTable(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(t.Context(), create); err != nil {
		t.Fatal(err)
	}
	return Guarded{
		Store: g,
		Append: func(ctx context.Context, f uint64) error {
			tx, ok := fence.TxFromContext(ctx)
			if !ok {
				return errors.New("no transaction in the guarded context")
			}
			_, err := tx.ExecContext(ctx, insert, int64(f))
			return err
		},
		Log: func(t *testing.T) []uint64 {
			rows, err := db.QueryContext(t.Context(), `SELECT fence FROM log ORDER BY id`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var log []uint64
			for rows.Next() {
				var f int64
				if err := rows.Scan(&f); err != nil {
					t.Fatal(err)
				}
				log = append(log, uint64(f))
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			return log
		},
	}
}

// Concurrent has goroutines write one resource at once, with fences nearly
// in order, and checks that the highest fence recorded never decreases,
// as a reader sees it, and that the committed writes, in commit order,
// never have a fence below one committed before: each write is either
// admitted and recorded, or refused with a higher fence recorded.
func Concurrent(t *testing.T, g Guarded) {
	t.Helper()
	const (
		workers  = 8
		calls    = 20 // per worker
		resource = "report/monthly"
	)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	done := make(chan struct{})
	var reader sync.WaitGroup
	reader.Go(func() {
		var last uint64
		for {
			select {
			case <-done:
				return
			default:
			}
			h, err := g.Store.Highest(ctx, resource)
			if err != nil {
				t.Errorf("Highest: %v", err)
				return
			}
			if h < last {
				t.Errorf("the highest fence went back from %d to %d", last, h)
			}
			last = h
		}
	})

	// Holders come in order, as a lock's grants do, but arrive out of it:
	// each call's fence is a little below the latest grant's, so calls
	// close in fence race each other, and some are overtaken.
	var granted atomic.Uint64
	var mu sync.Mutex
	admitted := 0
	var writers sync.WaitGroup
	for w := range workers {
		writers.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for range calls {
				latest := granted.Add(1)
				f := latest - min(latest-1, rng.Uint64N(workers))
				err := g.Store.Guard(ctx, resource, f, func(ctx context.Context) error { return g.Append(ctx, f) })
				var stale *fence.StaleError
				switch {
				case err == nil:
					mu.Lock()
					admitted++
					mu.Unlock()
				case errors.As(err, &stale):
					if stale.Fence != f || stale.Highest <= f {
						t.Errorf("fence %d refused as %+v: the highest must be above it", f, stale)
					}
				default:
					t.Errorf("fence %d: %v", f, err)
					return
				}
			}
		})
	}
	writers.Wait()
	close(done)
	reader.Wait()

	log := g.Log(t)
	if len(log) != admitted {
		t.Errorf("%d writes committed, %d admitted", len(log), admitted)
	}
	for i := 1; i < len(log); i++ {
		if log[i] < log[i-1] {
			t.Errorf("write %d with fence %d committed after one with fence %d", i, log[i], log[i-1])
		}
	}
	h, err := g.Store.Highest(ctx, resource)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) == 0 || h != log[len(log)-1] {
		t.Errorf("highest recorded %d; the committed writes' fences: %v", h, log)
	}
	t.Logf("%d of %d writes admitted, the highest fence %d", admitted, workers*calls, h)
}
