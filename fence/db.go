package fence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// DefaultTable is the table of highest fences when DBConfig.Table is "".
const DefaultTable = "zerotal_fences"

// DBConfig says which SQL a DB speaks and which table it keeps the highest
// fences in.
type DBConfig struct {
	Dialect Dialect
	// Table is the table's name, optionally with a schema ("app.fences");
	// DefaultTable when "". It is written into the statements as it is, so
	// it is letters, digits and underscores only.
	Table string
}

// Validate reports an unknown dialect or a table name that is not a plain
// identifier.
func (c DBConfig) Validate() error {
	if c.Dialect < SQLite || c.Dialect > MySQL {
		return fmt.Errorf("%w: dialect %v: use SQLite, PostgreSQL or MySQL", ErrInvalid, c.Dialect)
	}
	if c.Table != "" && !identifier.MatchString(c.Table) {
		return fmt.Errorf("%w: table %q: letters, digits and underscores, with at most one dot before a schema's table", ErrInvalid, c.Table)
	}
	return nil
}

// DB guards writes to a database/sql database with fences: the table of
// the highest fence per resource lives in that database, and the check is
// a statement of the write's own transaction. It is safe for concurrent
// use, and many processes may guard the same database.
type DB struct {
	db *sql.DB
	s  statements
}

var _ Store = (*DB)(nil)

// NewDB returns a guard of db speaking cfg.Dialect. It does not touch the
// database: CreateTable makes the table, or create it yourself with the
// statement of the package documentation.
func NewDB(db *sql.DB, cfg DBConfig) (*DB, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Table == "" {
		cfg.Table = DefaultTable
	}
	return &DB{db: db, s: cfg.Dialect.statements(cfg.Table)}, nil
}

// CreateTable creates the table of highest fences if it does not exist.
func (g *DB) CreateTable(ctx context.Context) error {
	if _, err := g.db.ExecContext(ctx, g.s.create); err != nil {
		return fmt.Errorf("fence: create table: %w", err)
	}
	return nil
}

// Write runs fn in a transaction whose first statement is the guard, and
// commits: fn's statements are made only when fence is not below the
// highest fence recorded for resource, and fence is recorded with them.
// When it is below, Write returns a *StaleError (matching ErrStale) and
// rolls back without running fn. When fn returns an error, or the commit
// fails, nothing is written and nothing recorded.
//
// The guard holds the resource's row lock until the commit, so a
// concurrent Write of an older holder waits and is then refused; under
// the isolation levels above READ COMMITTED a database may refuse it with
// a serialization error instead, which is a refusal too.
func (g *DB) Write(ctx context.Context, resource string, fence uint64, fn func(tx *sql.Tx) error) error {
	if err := validate(resource, fence); err != nil {
		return err
	}
	tx, err := g.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("fence: begin: %w", err)
	}
	committed := false
	defer func() {
		if !committed { // also when fn panics
			_ = tx.Rollback()
		}
	}()
	if err := g.Check(ctx, tx, resource, fence); err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("fence: commit: %w", err)
	}
	committed = true
	return nil
}

// Check is the guard alone, in a transaction of the caller's: it records
// fence as the highest for resource and holds the row's lock until tx
// ends, or returns a *StaleError when fence is below the highest
// recorded; the caller must then roll tx back. Make it the transaction's
// first statement, so that nothing the transaction read before it was
// read without the lock.
func (g *DB) Check(ctx context.Context, tx *sql.Tx, resource string, fence uint64) error {
	if err := validate(resource, fence); err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, g.s.guard, resource, int64(fence))
	if err != nil {
		return fmt.Errorf("fence: guard %q: %w", resource, err)
	}
	if g.s.byInsertID {
		highest, err := res.LastInsertId()
		if err != nil {
			return fmt.Errorf("fence: guard %q: %w", resource, err)
		}
		if highest == 0 {
			return nil
		}
		return &StaleError{Resource: resource, Fence: fence, Highest: uint64(highest)}
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("fence: guard %q: %w", resource, err)
	}
	if n > 0 {
		return nil
	}
	// Refused; the row is locked, so this read is the fence that won.
	highest, err := g.read(ctx, tx, resource)
	if err != nil {
		return err
	}
	return &StaleError{Resource: resource, Fence: fence, Highest: highest}
}

// Guard implements Store: Write with fn's context carrying the
// transaction (TxFromContext), so that the work of a request the HTTP
// middleware admitted can be written in it.
func (g *DB) Guard(ctx context.Context, resource string, fence uint64, fn func(ctx context.Context) error) error {
	return g.Write(ctx, resource, fence, func(tx *sql.Tx) error {
		return fn(context.WithValue(ctx, txKey{}, tx))
	})
}

// Highest is the highest fence recorded for resource, 0 when none was.
func (g *DB) Highest(ctx context.Context, resource string) (uint64, error) {
	return g.read(ctx, g.db, resource)
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (g *DB) read(ctx context.Context, q querier, resource string) (uint64, error) {
	var highest int64
	err := q.QueryRowContext(ctx, g.s.highest, resource).Scan(&highest)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("fence: read %q: %w", resource, err)
	}
	return uint64(highest), nil
}

type txKey struct{}

// TxFromContext is the transaction DB.Guard runs its function in (and so,
// behind the HTTP middleware with a DB store, the request's handler): the
// one to write the guarded work in. ok is false outside one.
func TxFromContext(ctx context.Context) (tx *sql.Tx, ok bool) {
	tx, ok = ctx.Value(txKey{}).(*sql.Tx)
	return tx, ok
}
