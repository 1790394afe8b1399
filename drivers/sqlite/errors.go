package sqlite

import (
	"context"
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/zerotal/lock/drivers"
)

// Errors returned by Open for a file it refuses to use. The file is left
// exactly as it was.
var (
	// ErrNotDatabase: the path names a file that is not a SQLite database.
	ErrNotDatabase = errors.New("sqlite: not a SQLite database")
	// ErrSchemaTooNew: the file was written by a newer version of this
	// package, whose schema this version cannot read.
	ErrSchemaTooNew = errors.New("sqlite: lock schema is newer than this version supports")
)

// sqliteCode returns the primary SQLite result code of err, or 0.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() & 0xff
	}
	return 0
}

// isBusy reports an error that means another connection holds the lock the
// statement needed; such a statement has had no effect.
func isBusy(err error) bool {
	switch sqliteCode(err) {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return true
	}
	return false
}

// classify turns the error of a finished call into what callers compare
// against: the context's error when the context ended, ErrClosed after
// Close, and otherwise an error matching drivers.ErrUnavailable.
func (d *Driver) classify(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("sqlite: %s: %w", op, cerr)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, drivers.ErrClosed) || errors.Is(err, drivers.ErrUnavailable) {
		return err
	}
	if d.closed.Load() {
		return drivers.ErrClosed
	}
	return drivers.Unavailable("sqlite "+op, err)
}
