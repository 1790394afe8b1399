package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// schemaVersion is the version this package writes and reads. migrations[i]
// takes a file from version i to version i+1; a later version appends to the
// list and never edits an entry already released.
const schemaVersion = 4

// fenceTriggers advance last_fence in the statement that grants a key; the
// first migration creates them and the third again, after it replaces the
// table they are on.
const fenceTriggers = `
	CREATE TRIGGER zerotal_locks_fence_on_insert AFTER INSERT ON zerotal_locks BEGIN
		UPDATE zerotal_lock_meta SET value = NEW.fence WHERE name = 'last_fence' AND value < NEW.fence;
	END;
	CREATE TRIGGER zerotal_locks_fence_on_update AFTER UPDATE OF fence ON zerotal_locks
	WHEN NEW.fence > OLD.fence BEGIN
		UPDATE zerotal_lock_meta SET value = NEW.fence WHERE name = 'last_fence' AND value < NEW.fence;
	END;`

var migrations = []string{
	// 0 -> 1: the lock table and the fence counter.
	//
	// expires_us is the holder's deadline in Unix microseconds of the host's
	// wall clock; a row whose deadline has passed is free. last_fence only
	// grows: the triggers advance it in the statement that grants a key, so
	// fences stay strictly increasing per key even when rows are deleted.
	`CREATE TABLE zerotal_lock_meta (
		name  TEXT PRIMARY KEY,
		value INTEGER NOT NULL
	) WITHOUT ROWID;
	INSERT INTO zerotal_lock_meta (name, value) VALUES ('schema_version', 0), ('last_fence', 0);
	CREATE TABLE zerotal_locks (
		key        TEXT PRIMARY KEY,
		owner      TEXT NOT NULL,
		fence      INTEGER NOT NULL,
		expires_us INTEGER NOT NULL
	) WITHOUT ROWID;` + fenceTriggers,

	// 1 -> 2: semaphores and read/write locks in tables of their own, as
	// development builds wrote them; 2 -> 3 carries their rows over.
	`CREATE TABLE zerotal_shared_names (
		key  TEXT PRIMARY KEY,
		kind INTEGER NOT NULL,
		lim  INTEGER NOT NULL
	) WITHOUT ROWID;
	CREATE TABLE zerotal_shared_holders (
		key        TEXT NOT NULL,
		owner      TEXT NOT NULL,
		fence      INTEGER NOT NULL,
		expires_us INTEGER NOT NULL,
		write      INTEGER NOT NULL,
		PRIMARY KEY (key, owner)
	) WITHOUT ROWID;
	CREATE TABLE zerotal_shared_queue (
		key      TEXT NOT NULL,
		owner    TEXT NOT NULL,
		seq      INTEGER NOT NULL,
		write    INTEGER NOT NULL,
		alive_us INTEGER NOT NULL,
		ttl_us   INTEGER NOT NULL,
		PRIMARY KEY (key, owner)
	) WITHOUT ROWID;
	CREATE TRIGGER zerotal_locks_not_shared BEFORE INSERT ON zerotal_locks
	WHEN EXISTS (SELECT 1 FROM zerotal_shared_holders WHERE key = NEW.key
		AND expires_us > CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER))
	OR EXISTS (SELECT 1 FROM zerotal_shared_queue WHERE key = NEW.key
		AND alive_us > CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER)) BEGIN
		SELECT RAISE(ABORT, 'zerotal: the key is held as a semaphore or read/write lock');
	END;`,

	// 2 -> 3: one data model for every claim (state.go), which replaces
	// version 2's (no release wrote it). zerotal_locks holds every grant,
	// one row per (key, owner), with the claim it was made for (excl: a
	// mutex or a write holds the key alone); zerotal_queue every waiter's
	// place, a mutex's as a semaphore's, alive until alive_us unless its
	// waiter visits it. The rows of version 1 and 2 are carried over.
	`CREATE TABLE zerotal_grants (
		key        TEXT NOT NULL,
		owner      TEXT NOT NULL,
		fence      INTEGER NOT NULL,
		expires_us INTEGER NOT NULL,
		kind       INTEGER NOT NULL,
		lim        INTEGER NOT NULL,
		excl       INTEGER NOT NULL,
		PRIMARY KEY (key, owner)
	) WITHOUT ROWID;
	INSERT INTO zerotal_grants SELECT key, owner, fence, expires_us, 0, 0, 1 FROM zerotal_locks;
	INSERT OR IGNORE INTO zerotal_grants SELECT h.key, h.owner, h.fence, h.expires_us, n.kind, n.lim, h.write
		FROM zerotal_shared_holders h JOIN zerotal_shared_names n USING (key);
	CREATE TABLE zerotal_queue (
		key      TEXT NOT NULL,
		owner    TEXT NOT NULL,
		seq      INTEGER NOT NULL,
		kind     INTEGER NOT NULL,
		lim      INTEGER NOT NULL,
		excl     INTEGER NOT NULL,
		alive_us INTEGER NOT NULL,
		ttl_us   INTEGER NOT NULL,
		PRIMARY KEY (key, owner)
	) WITHOUT ROWID;
	INSERT INTO zerotal_queue SELECT q.key, q.owner, q.seq, n.kind, n.lim, q.write, q.alive_us, q.ttl_us
		FROM zerotal_shared_queue q JOIN zerotal_shared_names n USING (key);
	DROP TABLE zerotal_shared_queue;
	DROP TABLE zerotal_shared_holders;
	DROP TABLE zerotal_shared_names;
	DROP TABLE zerotal_locks;
	ALTER TABLE zerotal_grants RENAME TO zerotal_locks;` + fenceTriggers,

	// 3 -> 4: the cap on total hold time (drivers.Request.MaxHold). A
	// grant's cap_us is the deadline no refresh takes it past; a place's
	// max_hold_us is its request's MaxHold, from which the grant it becomes
	// takes its cap when another process lets it in. Both are NULL without
	// a cap, which the rows carried over are, and a lock without one
	// writes nothing more than before. Adding a column rewrites no row.
	`ALTER TABLE zerotal_locks ADD COLUMN cap_us INTEGER;
	ALTER TABLE zerotal_queue ADD COLUMN max_hold_us INTEGER;`,
}

// queryer is what reading the version needs: a *sql.Conn or a *sql.Tx.
type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// readSchemaVersion returns the schema version stored in the file, 0 when
// the file has no lock tables yet.
func readSchemaVersion(ctx context.Context, q queryer) (int, error) {
	var n int
	err := q.QueryRowContext(ctx,
		`SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'zerotal_lock_meta'`).Scan(&n)
	if err != nil || n == 0 {
		return 0, err
	}
	var v int
	err = q.QueryRowContext(ctx, `SELECT value FROM zerotal_lock_meta WHERE name = 'schema_version'`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("table zerotal_lock_meta has no schema_version row")
	}
	return v, err
}

// checkVersion refuses a file written by a newer schema.
func checkVersion(path string, v int) error {
	if v > schemaVersion {
		return fmt.Errorf("%w: %s has lock schema version %d, this version reads up to %d",
			ErrSchemaTooNew, path, v, schemaVersion)
	}
	return nil
}

// migrate brings the schema up to schemaVersion inside one write
// transaction, so concurrent openers agree and a failure leaves the file
// as it was.
func migrate(ctx context.Context, conn *sql.Conn, path string) (err error) {
	tx, err := conn.BeginTx(ctx, nil) // BEGIN IMMEDIATE: see the _txlock DSN parameter
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	v, err := readSchemaVersion(ctx, tx)
	if err != nil {
		return err
	}
	if err := checkVersion(path, v); err != nil {
		return err
	}
	if v == schemaVersion {
		return tx.Rollback()
	}
	for i := v; i < schemaVersion; i++ {
		if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
			return fmt.Errorf("schema migration to version %d: %w", i+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx,
		`UPDATE zerotal_lock_meta SET value = ? WHERE name = 'schema_version'`, schemaVersion); err != nil {
		return err
	}
	return tx.Commit()
}
