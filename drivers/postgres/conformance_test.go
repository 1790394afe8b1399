package postgres_test

import (
	"context"
	"os"
	"path"
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
// listening connection at all: waiters wake on the bounded poll. make
// test runs its core, the sections where a waiter must find its turn by
// polling (pollingCore); ZEROTAL_POSTGRES_FULL=1 (make soak) runs every
// section, as the two above do.
func TestConformance_PgBouncerPolling(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	h := harness{postgres.Config{URL: pgtest.StartBouncer(t, srv).URL(), NoListen: true}}
	full := os.Getenv("ZEROTAL_POSTGRES_FULL") != ""
	newHarness := func(t *testing.T) driverstest.Harness {
		if !full && !pollingCore[path.Base(t.Name())] {
			t.Skip("not in the polling core; set ZEROTAL_POSTGRES_FULL=1 to run every section")
		}
		return h
	}
	driverstest.Run(t, newHarness)
	driverstest.RunShared(t, newHarness)
}

// pollingCore are the sections of the conformance suite in which a
// waiter is handed a key, or gives up, with nothing but its poll to wake
// it: the order of the queue and the hand-over must hold all the same.
var pollingCore = map[string]bool{
	"WaitHandOffOnRelease": true, "WaitHandOffOnExpiry": true, "WaitDeadline": true,
	"AcquireAllWait": true, "HammerWaiters": true, "SemaphoreFIFO": true,
	"RWWaitingWriterStopsNewReaders": true, "MaxHoldWaiterCapFromGrant": true,
}
