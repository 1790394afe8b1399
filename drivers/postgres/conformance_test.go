package postgres_test

import (
	"context"
	"os"
	"testing"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/drivers/postgres"
	"github.com/zerotal/lock/drivers/postgres/pgtest"
)

// harness opens every handle on one database, each with its own pool.
type harness struct{ cfg postgres.Config }

func (h harness) NewDriver(ctx context.Context) (drivers.Driver, error) {
	return postgres.Open(ctx, h.cfg)
}

func runAll(t *testing.T, cfg postgres.Config) {
	h := harness{cfg}
	driverstest.Run(t, func(t *testing.T) driverstest.Harness { return h })
	driverstest.RunShared(t, func(t *testing.T) driverstest.Harness { return h })
}

// TestConformance runs the suite on a direct connection, waiters woken by
// LISTEN/NOTIFY.
func TestConformance(t *testing.T) {
	t.Parallel()
	runAll(t, postgres.Config{URL: pgtest.Start(t).URL()})
}

// TestConformance_PgBouncer runs the suite through PgBouncer in
// transaction mode, the waiters listening on a direct connection beside
// it, as the package recommends.
func TestConformance_PgBouncer(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	runAll(t, postgres.Config{URL: pgtest.StartBouncer(t, srv).URL(), ListenURL: srv.URL()})
}

// TestConformance_PgBouncerPolling runs it through PgBouncer with no
// listening connection at all: waiters wake on the bounded poll. It runs
// with ZEROTAL_POSTGRES_FULL=1 (make soak), beside the two above that
// make test runs.
func TestConformance_PgBouncerPolling(t *testing.T) {
	if os.Getenv("ZEROTAL_POSTGRES_FULL") == "" {
		t.Skip("set ZEROTAL_POSTGRES_FULL=1 to run the suite through PgBouncer without LISTEN")
	}
	t.Parallel()
	srv := pgtest.Start(t)
	runAll(t, postgres.Config{URL: pgtest.StartBouncer(t, srv).URL(), NoListen: true})
}
