package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers/postgres/pgtest"
	"github.com/zerotal/lock/fence"
)

// guarded is a Store whose guarded work appends the fence to a log that
// commits with it, in the order the guard admitted them.
type guarded struct {
	store   fence.Store
	highest func(ctx context.Context, resource string) (uint64, error)
	append  func(ctx context.Context, fence uint64) error // the guarded work
	log     func(t *testing.T) []uint64                   // what committed, in order
}

// TestGuard_ConcurrentFencesNeverGoBack: goroutines write one resource
// at once, with fences nearly in order. The highest fence recorded never decreases,
// as a reader sees it, and the committed writes, in commit order, never
// have a fence below one committed before: each write is either admitted
// and recorded, or refused with a higher fence recorded.
func TestGuard_ConcurrentFencesNeverGoBack(t *testing.T) {
	t.Parallel()
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		var mu sync.Mutex
		var log []uint64
		m := &fence.Memory{}
		checkConcurrent(t, guarded{
			store: m, highest: m.Highest,
			append: func(_ context.Context, f uint64) error {
				mu.Lock()
				defer mu.Unlock()
				log = append(log, f)
				return nil
			},
			log: func(*testing.T) []uint64 { mu.Lock(); defer mu.Unlock(); return log },
		})
	})
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		dsn := "file:" + filepath.Join(t.TempDir(), "app.db") + "?_pragma=busy_timeout(30000)&_pragma=journal_mode(WAL)"
		checkConcurrent(t, sqlGuarded(t, "sqlite", dsn, fence.SQLite,
			`CREATE TABLE log (id INTEGER PRIMARY KEY, fence INTEGER NOT NULL)`, `INSERT INTO log (fence) VALUES (?)`))
	})
	t.Run("postgresql", func(t *testing.T) {
		t.Parallel()
		checkConcurrent(t, sqlGuarded(t, "pgx", pgtest.Start(t).URL(), fence.PostgreSQL,
			`CREATE TABLE log (id bigserial PRIMARY KEY, fence bigint NOT NULL)`, `INSERT INTO log (fence) VALUES ($1)`))
	})
}

// sqlGuarded is a DB on database driverName at dsn, whose guarded work
// inserts into a log table in the guard's transaction: its ids are in
// commit order, since the guard's row lock is held from before the insert
// until the commit.
func sqlGuarded(t *testing.T, driverName, dsn string, d fence.Dialect, create, insert string) guarded {
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
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
	return guarded{
		store: g, highest: g.Highest,
		append: func(ctx context.Context, f uint64) error {
			tx, ok := fence.TxFromContext(ctx)
			if !ok {
				return errors.New("no transaction in the guarded context")
			}
			_, err := tx.ExecContext(ctx, insert, int64(f))
			return err
		},
		log: func(t *testing.T) []uint64 {
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

func checkConcurrent(t *testing.T, g guarded) {
	const (
		workers  = 8
		calls    = 20 // per worker
		resource = "report/monthly"
	)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	// A reader: the recorded highest never decreases.
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
			h, err := g.highest(ctx, resource)
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
				err := g.store.Guard(ctx, resource, f, func(ctx context.Context) error { return g.append(ctx, f) })
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

	log := g.log(t)
	if len(log) != admitted {
		t.Errorf("%d writes committed, %d admitted", len(log), admitted)
	}
	for i := 1; i < len(log); i++ {
		if log[i] < log[i-1] {
			t.Errorf("write %d with fence %d committed after one with fence %d", i, log[i], log[i-1])
		}
	}
	h, err := g.highest(ctx, resource)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) == 0 || h != log[len(log)-1] {
		t.Errorf("highest recorded %d; the committed writes' fences: %v", h, log)
	}
	t.Logf("%d of %d writes admitted, the highest fence %d", admitted, workers*calls, h)
}
