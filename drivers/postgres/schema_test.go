package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/postgres"
	"github.com/zerotal/lock/drivers/postgres/pgtest"
)

// TestSchema_NewerIsRefused: a database whose lock schema is newer than
// this driver knows is refused with ErrSchemaTooNew, which names both
// versions, and is left as it was; the schema of this version is created
// once, by whichever of several openers comes first.
func TestSchema_NewerIsRefused(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			d, err := postgres.Open(t.Context(), postgres.Config{URL: srv.URL(), NoListen: true})
			if err == nil {
				_ = d.Close()
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatalf("Open of a new database by one of 4 at once: %v", err)
		}
	}
	conn, err := pgx.Connect(t.Context(), srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), `UPDATE zerotal_lock.meta SET value = 99 WHERE name = 'schema_version'`); err != nil {
		t.Fatal(err)
	}
	d, err := postgres.Open(t.Context(), postgres.Config{URL: srv.URL(), NoListen: true})
	if d != nil || !errors.Is(err, postgres.ErrSchemaTooNew) || !strings.Contains(err.Error(), "99") {
		t.Fatalf("Open of a database of schema 99 = %v, %v; want ErrSchemaTooNew naming 99", d, err)
	}
	var v int
	if err := conn.QueryRow(t.Context(), `SELECT value FROM zerotal_lock.meta WHERE name = 'schema_version'`).Scan(&v); err != nil || v != 99 {
		t.Fatalf("schema version after the refusal = %d, %v; want 99, untouched", v, err)
	}
}

// TestSchema_UpgradeFromVersion1KeepsTheLocks: a database of schema 1
// with a grant and a place in it is upgraded to this version when a
// driver opens it; the grant (which has no cap) and the place are kept
// and go on as before.
func TestSchema_UpgradeFromVersion1KeepsTheLocks(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	conn, err := pgx.Connect(t.Context(), srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	key := newKey("upgrade")
	for _, sql := range []string{
		postgres.Migrations[0],
		`UPDATE zerotal_lock.meta SET value = 1 WHERE name = 'schema_version'`,
		`INSERT INTO zerotal_lock.grants (key, owner, fence, expires_us, kind, lim, excl)
			VALUES ($1, 'holder', nextval('zerotal_lock.fences'), zerotal_lock.now_us() + 3600000000, 0, 0, true)`,
		`INSERT INTO zerotal_lock.queue (key, owner, seq, kind, lim, excl, alive_us, ttl_us)
			VALUES ($1, 'waiter', nextval('zerotal_lock.places'), 0, 0, true, zerotal_lock.now_us() + 3600000000, 3600000000)`,
	} {
		var args []any
		if strings.Contains(sql, "$1") {
			args = append(args, key)
		}
		if _, err := conn.Exec(t.Context(), sql, args...); err != nil {
			t.Fatalf("making schema 1: %v", err)
		}
	}
	d := open(t, srv.URL())
	var v int
	if err := conn.QueryRow(t.Context(), `SELECT value FROM zerotal_lock.meta WHERE name = 'schema_version'`).Scan(&v); err != nil || v != 2 {
		t.Fatalf("schema version after the upgrade = %d, %v; want 2", v, err)
	}
	if ok, err := d.Extend(t.Context(), key, "holder", 2*time.Hour); !ok || err != nil {
		t.Fatalf("Extend of schema 1's grant = %v, %v; want true (no cap)", ok, err)
	}
	h, ok, err := d.Inspect(t.Context(), key)
	if err != nil || !ok || len(h.Holders) != 1 || h.Holders[0].Remaining < time.Hour || h.WaiterCount != 1 {
		t.Fatalf("after the upgrade the key is %+v, %v, %v; want schema 1's holder, extended, and its waiter", h, ok, err)
	}
	if ok, err := d.Release(t.Context(), key, "holder"); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	g, err := d.Acquire(t.Context(), drivers.Request{Keys: []string{key}, Owner: "other", TTL: time.Hour})
	if err != nil || g.Acquired || g.Busy.Key != key {
		t.Fatalf("Acquire after the release = %+v, %v; want the key handed to schema 1's waiter", g, err)
	}
}
