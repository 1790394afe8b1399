package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/zerotal/lock/fence"
)

// readableStore is a Store that says what it recorded: both of ours.
type readableStore interface {
	fence.Store
	Highest(ctx context.Context, resource string) (uint64, error)
}

// stores are a Memory and a DB on a SQLite file.
func stores(t *testing.T) map[string]readableStore {
	return map[string]readableStore{"memory": &fence.Memory{}, "sqlite": sqliteGuard(t)}
}

func sqliteGuard(t *testing.T) *fence.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "app.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	g, err := fence.NewDB(db, fence.DBConfig{Dialect: fence.SQLite, Table: "main.fences"})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.CreateTable(t.Context()); err != nil {
		t.Fatal(err)
	}
	return g
}

func TestStore_AdmitsTheSameOrAHigherFenceOnly(t *testing.T) {
	t.Parallel()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			ran := 0
			work := func(context.Context) error { ran++; return nil }
			boom := errors.New("boom")
			for _, step := range []struct {
				fence   uint64
				fn      func(context.Context) error
				want    error
				highest uint64 // recorded after the step
			}{
				{5, work, nil, 5},
				{5, work, nil, 5},            // one holder writes again
				{4, work, fence.ErrStale, 5}, // an older holder
				{9, func(context.Context) error { return boom }, boom, 5}, // failed work records nothing
				{7, work, nil, 7},
				{0, work, fence.ErrInvalid, 7},
				{fence.MaxFence + 1, work, fence.ErrInvalid, 7},
			} {
				before := ran
				err := s.Guard(ctx, "doc", step.fence, step.fn)
				if !errors.Is(err, step.want) || (step.want == nil) != (err == nil) {
					t.Fatalf("fence %d: %v, want %v", step.fence, err, step.want)
				}
				if errors.Is(err, fence.ErrStale) || errors.Is(err, fence.ErrInvalid) {
					if ran != before {
						t.Fatalf("fence %d: refused, yet the work ran", step.fence)
					}
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
		})
	}
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
	g := sqliteGuard(t)
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
