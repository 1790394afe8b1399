package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/zerotal/lock/fence"
	"github.com/zerotal/lock/fence/fencetest"
)

// sqliteGuard is a DB guarding a new SQLite file, its table of fences
// named with its schema, and that database.
func sqliteGuard(t *testing.T) (*fence.DB, *sql.DB) {
	t.Helper()
	db := openDB(t, "sqlite", "file:"+filepath.Join(t.TempDir(), "app.db")+"?_pragma=busy_timeout(10000)")
	g, err := fence.NewDB(db, fence.DBConfig{Dialect: fence.SQLite, Table: "main.fences"})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.CreateTable(t.Context()); err != nil {
		t.Fatal(err)
	}
	return g, db
}

// TestStore_Admission: fencetest.Admission on Memory and on a DB of SQLite.
func TestStore_Admission(t *testing.T) {
	t.Parallel()
	t.Run("memory", func(t *testing.T) { t.Parallel(); fencetest.Admission(t, &fence.Memory{}) })
	t.Run("sqlite", func(t *testing.T) { t.Parallel(); g, _ := sqliteGuard(t); fencetest.Admission(t, g) })
}

// A call waiting for its turn behind a running one gives up when its
// context ends.
func TestMemory_WaitEndsWithTheContext(t *testing.T) {
	t.Parallel()
	m := &fence.Memory{}
	inside, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- m.Guard(t.Context(), "doc", 5, func(context.Context) error {
			close(inside)
			<-release
			return nil
		})
	}()
	<-inside
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := m.Guard(ctx, "doc", 6, func(context.Context) error { return nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting behind a running call: %v, want the context's end", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestDB_CheckInTheCallersTransaction(t *testing.T) {
	t.Parallel()
	g, _ := sqliteGuard(t)
	ctx := t.Context()
	if err := g.Write(ctx, "doc", 8, func(*sql.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	// Guard's function gets the transaction; Check in it refuses the older fence.
	err := g.Guard(ctx, "doc", 8, func(ctx context.Context) error {
		tx, ok := fence.TxFromContext(ctx)
		if !ok {
			t.Fatal("no transaction in Guard's context")
		}
		return g.Check(ctx, tx, "doc", 7)
	})
	if !errors.Is(err, fence.ErrStale) {
		t.Errorf("Check of fence 7 after 8: %v, want ErrStale", err)
	}
	if _, ok := fence.TxFromContext(ctx); ok {
		t.Error("a transaction outside Guard")
	}
}

func TestDBConfig_Validate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cfg fence.DBConfig
		ok  bool
	}{
		{fence.DBConfig{Dialect: fence.PostgreSQL}, true},
		{fence.DBConfig{Dialect: fence.MySQL, Table: "app.fences_2"}, true},
		{fence.DBConfig{}, false},
		{fence.DBConfig{Dialect: fence.SQLite, Table: "fences; DROP TABLE x"}, false},
		{fence.DBConfig{Dialect: fence.SQLite, Table: `"fences"`}, false},
		{fence.DBConfig{Dialect: fence.SQLite, Table: "a.b.c"}, false},
	} {
		if err := c.cfg.Validate(); (err == nil) != c.ok || (err != nil && !errors.Is(err, fence.ErrInvalid)) {
			t.Errorf("%+v: %v", c.cfg, err)
		}
	}
}
