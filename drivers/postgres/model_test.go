package postgres_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/drivers/postgres"
	"github.com/zerotal/lock/drivers/postgres/pgtest"
)

const envModelURL = "ZEROTAL_POSTGRES_MODEL_URL"

// TestModel drives three processes on one database with the model's
// random schedules (driverstest.RunModel), one of them SIGKILLed mid-wait
// in each: a dead process's places lapse after the waiter lease (3s).
func TestModel(t *testing.T) {
	t.Parallel()
	runModel(t, pgtest.Start(t).URL())
}

// TestModel_PgBouncer is TestModel through PgBouncer in transaction mode.
func TestModel_PgBouncer(t *testing.T) {
	t.Parallel()
	runModel(t, pgtest.StartBouncer(t, pgtest.Start(t)).URL())
}

func runModel(t *testing.T, url string) {
	d, err := postgres.Open(t.Context(), postgres.Config{URL: url, NoListen: true})
	if err != nil {
		t.Fatal(err)
	}
	_ = d.Close() // the schema, before the processes race to make it
	driverstest.RunModel(t, func(t *testing.T) []driverstest.Proc {
		return driverstest.StartModelProcs(t, 3, "TestModelChild", envModelURL+"="+url)
	}, driverstest.ModelOptions{Steps: 40, PlaceLapse: 3 * time.Second})
}

// TestModelChild is TestModel's child process; run alone it does nothing.
func TestModelChild(t *testing.T) {
	driverstest.ModelChild(func(ctx context.Context) (driverstest.Target, error) {
		return postgres.Open(ctx, postgres.Config{URL: os.Getenv(envModelURL)})
	})
	t.Skip("TestModel's child process")
}
