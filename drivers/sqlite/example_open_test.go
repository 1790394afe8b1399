package sqlite_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/zerotal/lock"
	_ "github.com/zerotal/lock/drivers/sqlite" // links the "sqlite" driver of lock.Open
)

// A program opens the sqlite driver through lock.Open once it imports this
// package; without the import, Open says which import is missing.
func Example_lockOpen() {
	dir, err := os.MkdirTemp("", "zerotal-lock-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	m, err := lock.Open(ctx, lock.Config{Driver: "sqlite", SQLite: lock.SQLiteConfig{Path: filepath.Join(dir, "locks.db")}})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	err = m.Try(ctx, "nightly-report", 10*time.Second, func(ctx context.Context, l *lock.Lock) error {
		fmt.Println("building the report, fence", l.Fence())
		return nil
	})
	fmt.Println("done:", err)
	// Output:
	// building the report, fence 1
	// done: <nil>
}
