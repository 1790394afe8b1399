package postgres_test

import (
	"context"
	"os"
	"path"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/drivers/postgres"
	"github.com/zerotal/lock/drivers/postgres/pgtest"
	"github.com/zerotal/lock/internal/testkit/poll"
)

const (
	envModelURL    = "ZEROTAL_POSTGRES_MODEL_URL"
	envModelListen = "ZEROTAL_POSTGRES_MODEL_LISTEN_URL"
)

// TestModel drives three processes on one database with the model's
// random schedules (driverstest.RunModel), one of them SIGKILLed mid-wait
// in each: a dead process's places lapse after the waiter lease (3s).
func TestModel(t *testing.T) {
	t.Parallel()
	runModel(t, pgtest.Start(t).URL(), nil)
}

// TestModel_PgBouncer is TestModel through PgBouncer in transaction mode,
// each process listening on a direct connection to the server beside it
// (Config.ListenURL), as the package recommends: through the pooler no
// notice reaches a listener, and its waiters would find their turn by the
// poll alone while believing they listen. TestConformance_PgBouncerPolling
// is the case with no listening at all.
func TestModel_PgBouncer(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	runModel(t, pgtest.StartBouncer(t, srv).URL(), srv)
}

// runModel runs the model over url; with direct, the processes listen on
// it, and each schedule starts once all three listen there.
func runModel(t *testing.T, url string, direct *pgtest.Server) {
	d, err := postgres.Open(t.Context(), postgres.Config{URL: url, NoListen: true})
	if err != nil {
		t.Fatal(err)
	}
	_ = d.Close() // the schema, before the processes race to make it
	driverstest.RunModel(t, func(t *testing.T) []driverstest.Proc {
		if direct == nil {
			return driverstest.StartModelProcs(t, 3, "TestModelChild", envModelURL+"="+url)
		}
		// The listening connections are known on the server by a name of
		// this schedule's own.
		name := "zerotal_model_" + path.Base(t.Name())
		procs := driverstest.StartModelProcs(t, 3, "TestModelChild", envModelURL+"="+url,
			envModelListen+"="+direct.URL()+"&application_name="+name)
		awaitDirectListeners(t, direct, name, len(procs))
		return procs
	}, driverstest.ModelOptions{Steps: 40, PlaceLapse: 3 * time.Second})
}

// awaitDirectListeners waits until n sessions named name listen on srv
// itself, not through a pooler.
func awaitDirectListeners(t *testing.T, srv *pgtest.Server, name string, n int) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	var got int
	var qerr error
	if !poll.Wait(20*time.Second, func() bool {
		qerr = conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'LISTEN %'`, name).Scan(&got)
		return qerr == nil && got == n
	}) {
		t.Fatalf("%d of the %d processes listen on the server directly after 20s (%v)", got, n, qerr)
	}
}

// TestModelChild is TestModel's child process; run alone it does nothing.
func TestModelChild(t *testing.T) {
	driverstest.ModelChild(func(ctx context.Context) (driverstest.Target, error) {
		return postgres.Open(ctx, postgres.Config{URL: os.Getenv(envModelURL), ListenURL: os.Getenv(envModelListen)})
	})
	t.Skip("TestModel's child process")
}
