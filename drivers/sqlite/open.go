package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/zerotal/lock/drivers"
)

// readConns is the size of the pool that serves Exists and the waiters'
// look at a key; one of them is held by the data_version poller while a
// handle has waiters.
const readConns = 4

// sqliteMagic opens every SQLite database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// Open opens (creating when needed) the lock database at cfg.Path, brings
// its schema up to date and returns a handle. Every handle has its own
// connections; Close releases them.
//
// Open refuses, leaving the file untouched, a path that is a directory, a
// file that is not a SQLite database (ErrNotDatabase) and a database
// written by a newer version of this package (ErrSchemaTooNew). It retries
// while other processes hold the write lock, up to cfg.BusyTimeout or the
// end of ctx.
func Open(ctx context.Context, cfg Config) (*Driver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	cfg = cfg.withDefaults()
	d := newDriver(cfg)
	if err := d.open(ctx); err != nil {
		_ = d.Close()
		return nil, err
	}
	return d, nil
}

func (d *Driver) open(ctx context.Context) error {
	path := d.cfg.Path
	var writeDSN, readDSN string
	if path == MemoryPath {
		d.memory = true
		writeDSN = ":memory:?" + dsnParams(false, false)
	} else {
		abs, err := filepath.Abs(path)
		if err != nil {
			return fmt.Errorf("sqlite: path %q: %w", path, err)
		}
		if err := precheckFile(abs); err != nil {
			return err
		}
		writeDSN = fileURI(abs) + "?" + dsnParams(false, d.cfg.Durable)
		readDSN = fileURI(abs) + "?" + dsnParams(true, d.cfg.Durable)
	}

	var err error
	if d.wdb, err = sql.Open("sqlite", writeDSN); err != nil {
		return fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	// One connection for every write of this handle: the handle's own
	// writers queue in Go instead of colliding on SQLite's write lock, and
	// a private in-memory database lives exactly as long as this conn.
	d.wdb.SetMaxOpenConns(1)
	d.wdb.SetMaxIdleConns(1)
	d.wdb.SetConnMaxLifetime(0)
	d.wdb.SetConnMaxIdleTime(0)

	err = d.retryBusy(ctx, "open", func(ctx context.Context) error {
		if d.wconn == nil {
			c, err := d.wdb.Conn(ctx)
			if err != nil {
				return err
			}
			d.wconn = c
		}
		return d.initSchema(ctx)
	})
	if err != nil {
		return d.openError(ctx, path, err)
	}
	if err := d.prepare(ctx); err != nil {
		return d.openError(ctx, path, err)
	}
	if d.memory {
		return nil
	}
	if d.rdb, err = sql.Open("sqlite", readDSN); err != nil {
		return fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	d.rdb.SetMaxOpenConns(readConns)
	d.rdb.SetMaxIdleConns(readConns)
	if err := d.prepareReads(ctx); err != nil {
		return d.openError(ctx, path, err)
	}
	d.watch.open = d.openVersionPoller
	return nil
}

// initSchema checks the version before anything writes to the file, then
// switches to WAL and migrates.
func (d *Driver) initSchema(ctx context.Context) error {
	v, err := readSchemaVersion(ctx, d.wconn)
	if err != nil {
		return err
	}
	if err := checkVersion(d.cfg.Path, v); err != nil {
		return err
	}
	if !d.memory {
		var mode string
		if err := d.wconn.QueryRowContext(ctx, `PRAGMA journal_mode = WAL`).Scan(&mode); err != nil {
			return err
		}
		if !strings.EqualFold(mode, "wal") {
			return fmt.Errorf("cannot switch to WAL mode (journal_mode is %q); is the file on a local file system?", mode)
		}
	}
	return migrate(ctx, d.wconn, d.cfg.Path)
}

// openError explains why a path cannot be used, keeping the cause for
// errors.Is.
func (d *Driver) openError(ctx context.Context, path string, err error) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("sqlite: open %q: %w", path, ctx.Err())
	case errors.Is(err, ErrSchemaTooNew):
		return err
	case sqliteCode(err) == sqlite3.SQLITE_NOTADB:
		return fmt.Errorf("%w: %s: %w", ErrNotDatabase, path, err)
	case sqliteCode(err) == sqlite3.SQLITE_CANTOPEN:
		return fmt.Errorf("sqlite: cannot open or create %q (does its directory exist and is it writable?): %w", path, err)
	case sqliteCode(err) == sqlite3.SQLITE_READONLY, sqliteCode(err) == sqlite3.SQLITE_PERM:
		return fmt.Errorf("sqlite: %q is not writable: %w", path, err)
	case isBusy(err):
		return fmt.Errorf("sqlite: open %q: other processes held the database locked for %v: %w", path, d.cfg.BusyTimeout, err)
	}
	return fmt.Errorf("sqlite: open %q: %w", path, err)
}

// precheckFile refuses a directory or a file that does not start like a
// SQLite database before SQLite opens it, so such a file is never touched.
// A missing or empty file is fine: SQLite makes it a new database.
func precheckFile(path string) error {
	st, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		dir := filepath.Dir(path)
		if dst, derr := os.Stat(dir); derr != nil || !dst.IsDir() {
			return fmt.Errorf("sqlite: cannot create %q: directory %q does not exist", path, dir)
		}
		if err := writable(dir, true); err != nil {
			return fmt.Errorf("sqlite: cannot create %q: directory %q is not writable: %w", path, dir, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("sqlite: path %q: %w", path, err)
	}
	if st.IsDir() {
		return fmt.Errorf("sqlite: path %q is a directory, want a database file", path)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("sqlite: path %q is not a regular file", path)
	}
	if err := writable(path, false); err != nil {
		return fmt.Errorf("sqlite: %q is not writable: %w", path, err)
	}
	// WAL mode creates path-wal and path-shm beside the file.
	if dir := filepath.Dir(path); writable(dir, true) != nil {
		return fmt.Errorf("sqlite: directory %q of %q is not writable (WAL mode keeps two files beside the database)", dir, path)
	}
	if st.Size() == 0 {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("sqlite: cannot read %q: %w", path, err)
	}
	defer f.Close()
	head := make([]byte, len(sqliteMagic))
	if _, err := io.ReadFull(f, head); err != nil || !bytes.Equal(head, sqliteMagic) {
		return fmt.Errorf("%w: %s does not start with the SQLite header", ErrNotDatabase, path)
	}
	return nil
}

// fileURI turns an absolute path into a SQLite URI, escaping the characters
// ('?', '#', '%') that would otherwise end or change the path.
func fileURI(abs string) string {
	return "file:" + (&url.URL{Path: filepath.ToSlash(abs)}).EscapedPath()
}

// dsnParams are the connection settings. busy_timeout is 0 because the
// driver retries SQLITE_BUSY itself, with finer steps than SQLite's own
// busy handler (which sleeps 1, 2, 5 ... 100 ms) and bounded by the ctx.
func dsnParams(readOnly, durable bool) string {
	sync := "NORMAL"
	if durable {
		sync = "FULL"
	}
	p := "_pragma=busy_timeout(0)&_pragma=synchronous(" + sync + ")&_txlock=immediate"
	if readOnly {
		p += "&_query_only=1"
	}
	return p
}

// Importing the package registers the "sqlite" driver of lock.Open.
func init() {
	drivers.Register("sqlite", func(ctx context.Context, o drivers.OpenOptions) (drivers.Driver, error) {
		return Open(ctx, Config{Path: o.SQLitePath, Durable: o.SQLiteDurable})
	})
}
