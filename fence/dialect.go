package fence

import (
	"fmt"
	"regexp"
	"strings"
)

// Dialect is the SQL a database speaks: where the upsert and the
// placeholders differ. The statements of each are in the package
// documentation, to be written by hand in another language.
type Dialect int

const (
	SQLite     Dialect = iota + 1 // SQLite 3.24 or later (its upsert)
	PostgreSQL                    // PostgreSQL 9.5 or later (ON CONFLICT)
	MySQL                         // MySQL 5.7 or later, MariaDB 10.3 or later (InnoDB)
)

func (d Dialect) String() string {
	switch d {
	case SQLite:
		return "sqlite"
	case PostgreSQL:
		return "postgresql"
	case MySQL:
		return "mysql"
	}
	return fmt.Sprintf("Dialect(%d)", int(d))
}

// statements is a dialect's SQL for one table.
type statements struct {
	create  string // the table, if it does not exist
	guard   string // the conditional upsert: (resource, fence)
	highest string // the recorded fence: (resource)
	// The guard affects no row exactly when the fence is stale
	// (PostgreSQL, SQLite). MySQL's count cannot say it (a row set to the
	// value it has counts 0, as a refused one); there byInsertID: the
	// statement's insert id (the OK packet's) is 0 when the fence is
	// admitted and the recorded fence when it is stale, set by the
	// refusing branch's LAST_INSERT_ID(fence).
	byInsertID bool
}

// identifier is a table name, optionally qualified by a schema (or, on
// MySQL, a database): it is written into the statements, so no quoting,
// nothing else.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)

func (d Dialect) statements(table string) statements {
	var s statements
	switch d {
	case SQLite:
		s = statements{
			create: `CREATE TABLE IF NOT EXISTS {table} (resource TEXT PRIMARY KEY NOT NULL, fence INTEGER NOT NULL)`,
			// In SQLite's DO UPDATE an unqualified column is the row already there.
			guard:   `INSERT INTO {table} (resource, fence) VALUES (?, ?) ON CONFLICT (resource) DO UPDATE SET fence = excluded.fence WHERE fence <= excluded.fence`,
			highest: `SELECT fence FROM {table} WHERE resource = ?`,
		}
	case PostgreSQL:
		s = statements{
			create: `CREATE TABLE IF NOT EXISTS {table} (resource text PRIMARY KEY, fence bigint NOT NULL)`,
			// ON CONFLICT locks the row already there even when the WHERE is
			// false; a concurrent guard waits for this transaction and then
			// checks its WHERE against the committed fence.
			guard:   `INSERT INTO {table} AS f (resource, fence) VALUES ($1, $2) ON CONFLICT (resource) DO UPDATE SET fence = EXCLUDED.fence WHERE f.fence <= EXCLUDED.fence`,
			highest: `SELECT fence FROM {table} WHERE resource = $1`,
		}
	case MySQL:
		s = statements{
			// Bytes, not characters under a collation: "Invoice" and
			// "invoice" are two lock keys, so two resources; 1024 is the
			// longest lock key.
			create: `CREATE TABLE IF NOT EXISTS {table} (resource VARBINARY(1024) NOT NULL PRIMARY KEY, fence BIGINT NOT NULL) ENGINE=InnoDB`,
			// VALUES(), not the row alias of MySQL 8.0.19, which MariaDB
			// lacks. IF evaluates one branch: LAST_INSERT_ID(fence) only
			// when refusing, leaving the row as it is.
			guard:      `INSERT INTO {table} (resource, fence) VALUES (?, ?) ON DUPLICATE KEY UPDATE fence = IF(fence <= VALUES(fence), VALUES(fence), LAST_INSERT_ID(fence))`,
			highest:    `SELECT fence FROM {table} WHERE resource = ?`,
			byInsertID: true,
		}
	}
	for _, q := range []*string{&s.create, &s.guard, &s.highest} {
		*q = strings.ReplaceAll(*q, "{table}", table)
	}
	return s
}
