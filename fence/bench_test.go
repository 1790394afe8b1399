package fence_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/zerotal/lock/drivers/postgres/pgtest"
	"github.com/zerotal/lock/fence"
)

// BenchmarkDB_Write: one UPDATE in a transaction, guarded by DB.Write and
// bare, one writer, on a SQLite file (WAL) and on PostgreSQL: the price of
// the guard statement.
func BenchmarkDB_Write(b *testing.B) {
	for _, c := range []struct {
		name, driverName string
		d                fence.Dialect
		dsn              func(b *testing.B) string
		update           string
	}{
		{"sqlite", "sqlite", fence.SQLite, func(b *testing.B) string {
			return "file:" + filepath.Join(b.TempDir(), "app.db") + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
		}, `UPDATE documents SET body = ? WHERE id = 1`},
		{"postgresql", "pgx", fence.PostgreSQL, func(b *testing.B) string { return pgtest.Start(b).URL() },
			`UPDATE documents SET body = $1 WHERE id = 1`},
	} {
		b.Run(c.name, func(b *testing.B) {
			db, err := sql.Open(c.driverName, c.dsn(b))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = db.Close() })
			ctx := context.Background()
			g, err := fence.NewDB(db, fence.DBConfig{Dialect: c.d})
			if err != nil {
				b.Fatal(err)
			}
			for _, q := range []string{`CREATE TABLE documents (id INTEGER PRIMARY KEY, body TEXT NOT NULL)`, `INSERT INTO documents VALUES (1, '')`} {
				if _, err := db.ExecContext(ctx, q); err != nil {
					b.Fatal(err)
				}
			}
			if err := g.CreateTable(ctx); err != nil {
				b.Fatal(err)
			}
			f := uint64(0) // across the runs of -count
			// A new body each time: SQLite skips writing a row to what it holds.
			update := func(tx *sql.Tx) error { _, err := tx.ExecContext(ctx, c.update, strconv.FormatUint(f, 10)); return err }
			b.Run("guarded", func(b *testing.B) {
				for b.Loop() {
					f++
					if err := g.Write(ctx, "doc", f, update); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("bare", func(b *testing.B) {
				for b.Loop() {
					f++
					tx, err := db.BeginTx(ctx, nil)
					if err != nil {
						b.Fatal(err)
					}
					if err := update(tx); err != nil {
						b.Fatal(err)
					}
					if err := tx.Commit(); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
