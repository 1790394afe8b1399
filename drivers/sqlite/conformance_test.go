package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/drivers/sqlite"
)

// fileHarness opens every handle on one database file.
type fileHarness struct{ path string }

func (h fileHarness) NewDriver(ctx context.Context) (drivers.Driver, error) {
	return sqlite.Open(ctx, sqlite.Config{Path: h.path})
}

func TestConformance_File(t *testing.T) {
	driverstest.Run(t, func(t *testing.T) driverstest.Harness {
		return fileHarness{path: filepath.Join(t.TempDir(), "locks.db")}
	})
}

// TestConformance_SharedFile runs the semaphore and read/write lock
// sections with handles on one file, each its own connections, as the
// processes of one host have.
func TestConformance_SharedFile(t *testing.T) {
	driverstest.RunShared(t, func(t *testing.T) driverstest.Harness {
		return fileHarness{path: filepath.Join(t.TempDir(), "locks.db")}
	})
}
