package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zerotal/lock/bench/manager"
	"github.com/zerotal/lock/drivers/sqlite"
)

// BenchmarkScaleHeld: the SQLite driver at 1 k and 100 k held locks in one
// file (make bench-scale). Memory is the database file with its WAL.
func BenchmarkScaleHeld(b *testing.B) {
	path := filepath.Join(b.TempDir(), "locks.db")
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: path})
	if err != nil {
		b.Fatal(err)
	}
	manager.BenchHeld(b, d, []int{1_000, 100_000}, 2*time.Second, "file", func() int64 {
		var n int64
		for _, p := range []string{path, path + "-wal"} {
			if fi, err := os.Stat(p); err == nil {
				n += fi.Size()
			}
		}
		return n
	})
}
