package fence_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync"
	"testing"

	"github.com/zerotal/lock/drivers/postgres/pgtest"
	"github.com/zerotal/lock/fence"
	"github.com/zerotal/lock/fence/fencetest"
)

// TestGuard_ConcurrentFencesNeverGoBack: fencetest.Concurrent on each
// store: the highest fence never decreases, and no write commits after one
// with a higher fence.
func TestGuard_ConcurrentFencesNeverGoBack(t *testing.T) {
	t.Parallel()
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		var mu sync.Mutex
		var log []uint64
		fencetest.Concurrent(t, fencetest.Guarded{
			Store: &fence.Memory{},
			Append: func(_ context.Context, f uint64) error {
				mu.Lock()
				defer mu.Unlock()
				log = append(log, f)
				return nil
			},
			Log: func(*testing.T) []uint64 { mu.Lock(); defer mu.Unlock(); return log },
		})
	})
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		db := openDB(t, "sqlite", "file:"+filepath.Join(t.TempDir(), "app.db")+"?_pragma=busy_timeout(30000)&_pragma=journal_mode(WAL)")
		fencetest.Concurrent(t, fencetest.SQL(t, db, fence.SQLite,
			`CREATE TABLE log (id INTEGER PRIMARY KEY, fence INTEGER NOT NULL)`, `INSERT INTO log (fence) VALUES (?)`))
	})
	t.Run("postgresql", func(t *testing.T) {
		t.Parallel()
		db := openDB(t, "pgx", pgtest.Start(t).URL())
		fencetest.Concurrent(t, fencetest.SQL(t, db, fence.PostgreSQL,
			`CREATE TABLE log (id bigserial PRIMARY KEY, fence bigint NOT NULL)`, `INSERT INTO log (fence) VALUES ($1)`))
	})
}

// openDB opens a database/sql database closed when the test ends.
func openDB(t *testing.T, driverName, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}
