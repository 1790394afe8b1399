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
	// byRows: the guard affects no row exactly when the fence is stale.
	// MySQL's affected-row count cannot say it (a row set to the value it
	// has counts 0, as a refused one), so there the guard only takes the
	// row's lock and recorded, a locking read of the fence, decides.
	byRows   bool
	recorded string // MySQL: the recorded fence, read under the row's lock: (resource)
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
			byRows:  true,
		}
	case PostgreSQL:
		s = statements{
			create: `CREATE TABLE IF NOT EXISTS {table} (resource text PRIMARY KEY, fence bigint NOT NULL)`,
			// ON CONFLICT locks the row already there even when the WHERE is
			// false; a concurrent guard waits for this transaction and then
			// checks its WHERE against the committed fence.
			guard:   `INSERT INTO {table} AS f (resource, fence) VALUES ($1, $2) ON CONFLICT (resource) DO UPDATE SET fence = EXCLUDED.fence WHERE f.fence <= EXCLUDED.fence`,
			highest: `SELECT fence FROM {table} WHERE resource = $1`,
			byRows:  true,
		}
	case MySQL:
		s = statements{
			// Bytes, not characters under a collation: "Invoice" and
			// "invoice" are two lock keys, so two resources; 1024 is the
			// longest lock key.
			create: `CREATE TABLE IF NOT EXISTS {table} (resource VARBINARY(1024) NOT NULL PRIMARY KEY, fence BIGINT NOT NULL) ENGINE=InnoDB`,
			// VALUES(), not the row alias of MySQL 8.0.19, which MariaDB lacks.
			guard:    `INSERT INTO {table} (resource, fence) VALUES (?, ?) ON DUPLICATE KEY UPDATE fence = IF(fence <= VALUES(fence), VALUES(fence), fence)`,
			highest:  `SELECT fence FROM {table} WHERE resource = ?`,
			recorded: `SELECT fence FROM {table} WHERE resource = ? FOR UPDATE`,
		}
	}
	for _, q := range []*string{&s.create, &s.guard, &s.highest, &s.recorded} {
		*q = strings.ReplaceAll(*q, "{table}", table)
	}
	return s
}
