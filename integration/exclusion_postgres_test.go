package integration

import (
	"testing"

	"github.com/zerotal/lock/drivers/postgres/pgtest"
)

// TestPostgres_ProcessesExclude: several OS processes on one postgres,
// through "lockcluster run --driver postgres".
func TestPostgres_ProcessesExclude(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	if _, err := pgtest.Binary("postgres"); err != nil {
		t.Skip(err)
	}
	srv := pgtest.Start(t)
	exclusion(t, []string{"LOCKCLUSTER_POSTGRES_URL=" + srv.URL()}, "--driver", "postgres")
}
