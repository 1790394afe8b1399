package postgres_test

import (
	"context"
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

func TestConformance(t *testing.T) {
	srv := pgtest.Start(t)
	h := harness{postgres.Config{URL: srv.URL()}}
	driverstest.Run(t, func(t *testing.T) driverstest.Harness { return h })
	driverstest.RunShared(t, func(t *testing.T) driverstest.Harness { return h })
}
