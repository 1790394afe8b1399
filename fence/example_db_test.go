package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite" // database/sql driver "sqlite"

	"github.com/zerotal/lock/fence"
)

// Two holders of the key "invoice/123" write the invoice: the newer one
// (fence 8) first, then the older one (fence 7), paused while it held the
// lock and resumed after its TTL. The older one's write is refused and
// the newer one's stays.
func ExampleDB_Write() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "fence-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "app.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		panic(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE invoices (id INTEGER PRIMARY KEY, note TEXT)`); err != nil {
		panic(err)
	}
	g, err := fence.NewDB(db, fence.DBConfig{Dialect: fence.SQLite})
	if err != nil {
		panic(err)
	}
	if err := g.CreateTable(ctx); err != nil {
		panic(err)
	}

	write := func(fenceOfHolder uint64, note string) error {
		return g.Write(ctx, "invoice/123", fenceOfHolder, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO invoices (id, note) VALUES (123, ?)`, note)
			return err
		})
	}
	fmt.Println("newer holder:", write(8, "paid by the newer holder"))
	err = write(7, "paid by the older holder")
	fmt.Println("older holder refused:", errors.Is(err, fence.ErrStale))
	fmt.Println(err)

	var note string
	if err := db.QueryRowContext(ctx, `SELECT note FROM invoices WHERE id = 123`).Scan(&note); err != nil {
		panic(err)
	}
	fmt.Println("the invoice:", note)
	// Output:
	// newer holder: <nil>
	// older holder refused: true
	// fence: stale: fence 7 for "invoice/123" is below 8, the highest seen: a newer holder has written since
	// the invoice: paid by the newer holder
}
