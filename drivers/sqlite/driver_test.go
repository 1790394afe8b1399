package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/drivers/sqlite"
	"github.com/zerotal/lock/internal/testkit/poll"
)

func TestDriver_BusyDatabaseIsRetriedThenUnavailable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locks.db")
	d := openT(t, sqlite.Config{Path: path, BusyTimeout: 300 * time.Millisecond})
	// Another program holds the write lock in an open transaction.
	conn, err := rawDB(t, path).Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	_, _, err = driverstest.Take(t.Context(), d, "k", "o", time.Minute)
	took := time.Since(start)
	if !errors.Is(err, drivers.ErrUnavailable) || errors.Is(err, drivers.ErrNotAcquired) {
		t.Fatalf("Acquire on a locked database = %v, want ErrUnavailable", err)
	}
	if took < 300*time.Millisecond || took > 5*time.Second {
		t.Fatalf("Acquire gave up after %v, want about the 300ms BusyTimeout", took)
	}
	// Readers are not blocked by a writer in WAL mode.
	if held, err := d.Exists(t.Context(), "k"); err != nil || held {
		t.Fatalf("Exists while another program writes = %v, %v", held, err)
	}
	// The caller's deadline wins when it is sooner.
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, _, err := driverstest.Take(ctx, d, "k", "o", time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire past its ctx deadline = %v, want DeadlineExceeded", err)
	}

	// A write lock freed while the driver retries lets the call through.
	waits := d.BusyWaits()
	done := make(chan error, 1)
	go func() {
		_, ok, err := driverstest.Take(context.Background(), d, "k", "o", time.Minute)
		if err == nil && !ok {
			err = errors.New("not acquired")
		}
		done <- err
	}()
	// The other program's transaction lasts until the call has met it.
	poll.Until(t, 5*time.Second, "the acquire to find the database locked", func() bool { return d.BusyWaits() > waits })
	if _, err := conn.ExecContext(t.Context(), `COMMIT`); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Acquire after the write lock was freed: %v", err)
	}
}

func TestDriver_SameOwnerAfterExpiryIsANewGrant(t *testing.T) {
	d := openT(t, sqlite.Config{Path: filepath.Join(t.TempDir(), "locks.db")})
	ctx := t.Context()
	f1, ok, err := driverstest.Take(ctx, d, "k", "o", 20*time.Millisecond)
	if err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	poll.Until(t, 5*time.Second, "lock expired", func() bool {
		held, err := d.Exists(ctx, "k")
		return err == nil && !held
	})
	if ok, err := d.Extend(ctx, "k", "o", time.Minute); err != nil || ok {
		t.Fatalf("Extend of an expired lock = %v, %v; want false", ok, err)
	}
	f2, ok, err := driverstest.Take(ctx, d, "k", "o", time.Minute)
	if err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if f2 <= f1 {
		t.Fatalf("re-grant after expiry kept fence %d (now %d); the Manager relies on a new fence to see the loss", f1, f2)
	}
}

func TestDriver_ReleaseOfExpiredLockIsFalseAndClearsTheRow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locks.db")
	d := openT(t, sqlite.Config{Path: path})
	ctx := t.Context()
	if _, ok, err := driverstest.Take(ctx, d, "k", "o", 10*time.Millisecond); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	poll.Until(t, 5*time.Second, "lock expired", func() bool {
		held, err := d.Exists(ctx, "k")
		return err == nil && !held
	})
	if ok, err := d.Release(ctx, "k", "o"); err != nil || ok {
		t.Fatalf("Release of an expired lock = %v, %v; want false", ok, err)
	}
	var rows int
	if err := rawDB(t, path).QueryRow(`SELECT count(*) FROM zerotal_locks`).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("rows after the release = %d, %v; want 0", rows, err)
	}
}

func TestDriver_NewHandleSweepsExpiredRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locks.db")
	a := openT(t, sqlite.Config{Path: path})
	ctx := t.Context()
	// a's first grant sweeps (nothing yet); its next ones are too soon to.
	if _, ok, err := driverstest.Take(ctx, a, "alive", "here", time.Hour); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	for _, key := range []string{"dead-1", "dead-2"} {
		if _, ok, err := driverstest.Take(ctx, a, key, "gone", time.Millisecond); err != nil || !ok {
			t.Fatalf("Acquire = %v, %v", ok, err)
		}
	}
	db := rawDB(t, path)
	count := func() int {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM zerotal_locks`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	poll.Until(t, 5*time.Second, "short locks expired", func() bool {
		held, err := a.Exists(ctx, "dead-2")
		return err == nil && !held
	})
	if n := count(); n != 3 {
		t.Fatalf("%d rows before the sweep, want 3", n)
	}
	b := openT(t, sqlite.Config{Path: path})
	if _, ok, err := driverstest.Take(ctx, b, "other", "o", time.Hour); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if n := count(); n != 2 {
		t.Fatalf("%d rows after a new handle's first grant, want 2 (alive, other)", n)
	}
}
