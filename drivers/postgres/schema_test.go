package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

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
