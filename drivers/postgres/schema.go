package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// schemaVersion is the version this package writes and reads.
// migrations[i] takes a database from version i to version i+1; a later
// version appends to the list and never edits an entry already released.
const schemaVersion = 2

// ErrSchemaTooNew: the database holds a lock schema of a newer version
// than this package knows. Upgrade every process before the newest one
// writes; this one refuses rather than misread the rows.
var ErrSchemaTooNew = errors.New("postgres: lock schema is newer than this version of the driver")

var migrations = []string{
	// 0 -> 1: one data model for every claim, as the SQLite driver's
	// schema 3 has it. grants holds a row per (key, owner) with the claim
	// it was made for (excl: a mutex or a write holds the key alone);
	// queue every waiter's place, alive until alive_us unless its waiter
	// visits it. Times are Unix microseconds of the database's clock
	// (now_us), never a client's. fences only grows, whatever rows are
	// deleted; places orders the queues.
	`CREATE SCHEMA IF NOT EXISTS zerotal_lock;
	CREATE TABLE zerotal_lock.meta (name text PRIMARY KEY, value bigint NOT NULL);
	INSERT INTO zerotal_lock.meta (name, value) VALUES ('schema_version', 0);
	CREATE SEQUENCE zerotal_lock.fences;
	CREATE SEQUENCE zerotal_lock.places;
	CREATE FUNCTION zerotal_lock.now_us() RETURNS bigint LANGUAGE sql VOLATILE
		AS $$ SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint $$;
	CREATE TABLE zerotal_lock.grants (
		key        text NOT NULL,
		owner      text NOT NULL,
		fence      bigint NOT NULL,
		expires_us bigint NOT NULL,
		kind       smallint NOT NULL,
		lim        integer NOT NULL,
		excl       boolean NOT NULL,
		PRIMARY KEY (key, owner)
	);
	CREATE INDEX ON zerotal_lock.grants (expires_us);
	CREATE TABLE zerotal_lock.queue (
		key      text NOT NULL,
		owner    text NOT NULL,
		seq      bigint NOT NULL,
		kind     smallint NOT NULL,
		lim      integer NOT NULL,
		excl     boolean NOT NULL,
		alive_us bigint NOT NULL,
		ttl_us   bigint NOT NULL,
		PRIMARY KEY (key, owner)
	);
	CREATE INDEX ON zerotal_lock.queue (alive_us);`,
	// 1 -> 2: the cap on total hold time (drivers.Request.MaxHold).
	// grants.cap_us is the database's time past which no refresh takes
	// the grant, NULL for none (least() passes over a NULL, so a deadline
	// clamped to it is unchanged); queue.max_hold_us is a waiter's cap,
	// counted from its grant, 0 for none. A process of version 1 still
	// running writes no cap and ignores one: upgrade every process.
	`ALTER TABLE zerotal_lock.grants ADD COLUMN cap_us bigint;
	ALTER TABLE zerotal_lock.queue ADD COLUMN max_hold_us bigint NOT NULL DEFAULT 0;`,
}

// schemaLock is the transaction-scoped advisory lock that serialises the
// processes creating or upgrading the schema at once.
const schemaLock = 2052410443

// migrate brings the schema up to schemaVersion in one transaction, so
// that concurrent openers agree and a failure leaves the database as it
// was. A newer schema is refused with ErrSchemaTooNew.
//
// An opener that waited for another's migration may still not see the
// tables it made: an advisory lock does not refresh the session's catalog
// cache, as a lock on a table would. Its migration then fails on an
// object that exists, and it reads the version again in a new
// transaction, which sees them.
func migrate(ctx context.Context, conn *pgx.Conn) error {
	for attempt := 0; ; attempt++ {
		err := migrateOnce(ctx, conn)
		pe, ok := errors.AsType[*pgconn.PgError](err)
		if !ok || attempt == 2 || pe.Code != "42P07" && pe.Code != "42P06" && pe.Code != "42710" && pe.Code != "23505" {
			return err
		}
	}
}

func migrateOnce(ctx context.Context, conn *pgx.Conn) (err error) {
	v, err := readVersion(ctx, conn)
	if err != nil || v == schemaVersion {
		return checkVersion(v, err)
	}
	if err := checkVersion(v, nil); err != nil {
		return err
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1::bigint)`, int64(schemaLock)); err != nil {
		return err
	}
	if v, err = readVersion(ctx, tx); err != nil || v == schemaVersion {
		return checkVersion(v, err)
	}
	if err := checkVersion(v, nil); err != nil {
		return err
	}
	for i := v; i < schemaVersion; i++ {
		if _, err := tx.Exec(ctx, migrations[i]); err != nil {
			return fmt.Errorf("lock schema migration to version %d: %w", i+1, err)
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE zerotal_lock.meta SET value = $1::bigint WHERE name = 'schema_version'`, int64(schemaVersion)); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func checkVersion(v int, err error) error {
	if err == nil && v > schemaVersion {
		return fmt.Errorf("%w: the database has lock schema version %d, this version reads up to %d",
			ErrSchemaTooNew, v, schemaVersion)
	}
	return err
}

type queryRower interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// readVersion returns the schema version stored in the database, 0 when
// it has no lock tables yet.
func readVersion(ctx context.Context, q queryRower) (int, error) {
	var exists bool
	err := q.QueryRow(ctx, `SELECT to_regclass('zerotal_lock.meta') IS NOT NULL`).Scan(&exists)
	if err != nil || !exists {
		return 0, err
	}
	var v int64
	err = q.QueryRow(ctx, `SELECT value FROM zerotal_lock.meta WHERE name = 'schema_version'`).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, errors.New("table zerotal_lock.meta has no schema_version row")
	}
	return int(v), err
}
