package postgres

import (
	"log/slog"
	"time"

	"github.com/zerotal/lock/drivers"
)

// DefaultPollInterval bounds a waiter's pause between two looks at its
// keys when no notification can reach it (no listening connection, or
// while it reconnects).
const DefaultPollInterval = 50 * time.Millisecond

// abortTimeout bounds the ROLLBACK of a transaction that went wrong, and
// the clean-up of a wait that ended, on a fresh context.
const abortTimeout = 5 * time.Second

// Config configures a PostgreSQL driver. Only URL is required.
type Config struct {
	// URL is the connection string of the database (postgres://user:pass@
	// host:port/db?sslmode=..., or key=value pairs), directly or through a
	// pooler in transaction mode (PgBouncer, pgdog): the driver keeps no
	// state in a session between statements. It may hold a password:
	// never print it.
	URL string
	// ListenURL is a direct connection (never through a pooler in
	// transaction mode, which cannot pass LISTEN) on which the driver
	// listens for its waiters being let in, so that they are told at once.
	// "" listens on URL; NoListen turns listening off. Either way a
	// waiter also looks every PollInterval, so a lost notification only
	// delays it and never breaks the order of the queue.
	ListenURL string
	// NoListen: waiters look every PollInterval only (URL is a pooler and
	// no direct connection is at hand).
	NoListen bool
	// PollInterval is the longest pause between two looks of a waiter
	// that is not listening; 0 means DefaultPollInterval.
	PollInterval time.Duration
	// MaxConns bounds the pool's connections; 0 means pgxpool's default.
	MaxConns int32
	// Logger receives the driver's logs (the listening connection lost
	// and back); nil discards them.
	Logger *slog.Logger
}

// Validate reports a configuration that cannot work. It does not connect.
func (c Config) Validate() error {
	switch {
	case c.URL == "":
		return &drivers.InvalidError{Field: "postgres URL", Reason: "required (postgres://user@host:port/database, or set LOCKCLUSTER_POSTGRES_URL)"}
	case c.PollInterval < 0 || c.PollInterval > time.Second:
		return &drivers.InvalidError{Field: "postgres PollInterval", Reason: "must be between 0 and 1s"}
	case c.MaxConns < 0:
		return &drivers.InvalidError{Field: "postgres MaxConns", Reason: "must be >= 0"}
	}
	return nil
}
