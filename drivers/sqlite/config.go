package sqlite

import (
	"time"

	"github.com/zerotal/lock/drivers"
)

// Defaults applied by Open to zero fields of Config.
const (
	// DefaultBusyTimeout bounds how long one call retries while other
	// processes hold SQLite's write lock.
	DefaultBusyTimeout = 5 * time.Second
	// DefaultPollInterval is the longest pause between two looks at
	// PRAGMA data_version while a handle has waiters.
	DefaultPollInterval = 2 * time.Millisecond
)

// MemoryPath is the Path of a database private to one Driver value.
const MemoryPath = ":memory:"

// Config configures a SQLite driver. Only Path is required.
type Config struct {
	// Path is the database file shared by every process on the host: a
	// plain file path on a local file system (not a URI; any character is
	// allowed). The file is created when missing; its directory must exist
	// and be writable, since WAL mode keeps Path-wal and Path-shm beside
	// it. MemoryPath (":memory:") gives a database private to the Driver
	// value, like the memory driver.
	Path string
	// BusyTimeout bounds how long one call keeps retrying while other
	// processes hold SQLite's write lock (SQLITE_BUSY) before it fails with
	// an error matching drivers.ErrUnavailable; the call's context ends it
	// sooner. 0 means DefaultBusyTimeout.
	BusyTimeout time.Duration
	// PollInterval is the longest pause between two looks at
	// PRAGMA data_version while AcquireWait is waiting. Shorter hands a
	// freed key over sooner; each look costs a few microseconds. 0 means
	// DefaultPollInterval.
	PollInterval time.Duration
	// Durable makes every commit wait until it is on disk
	// (synchronous=FULL), so that grants, releases and the fence counter
	// survive a power cut or an OS crash as well as a process crash. It
	// costs one fsync per commit, shared by the calls of a handle that run
	// together. Without it (synchronous=NORMAL) an OS crash can lose the
	// last commits, and with them fences already handed out.
	Durable bool
}

// Validate reports a configuration that cannot work. It does not touch the
// file system; Open reports a path that cannot be used.
func (c Config) Validate() error {
	switch {
	case c.Path == "":
		return &drivers.InvalidError{Field: "sqlite Path", Reason: "required (a file path, or \":memory:\" for a database private to this handle)"}
	case c.BusyTimeout < 0:
		return &drivers.InvalidError{Field: "sqlite BusyTimeout", Reason: "must be >= 0"}
	case c.PollInterval < 0:
		return &drivers.InvalidError{Field: "sqlite PollInterval", Reason: "must be >= 0"}
	case c.PollInterval > time.Second:
		return &drivers.InvalidError{Field: "sqlite PollInterval", Reason: "must be <= 1s"}
	}
	return nil
}

// withDefaults returns a copy of c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.BusyTimeout == 0 {
		c.BusyTimeout = DefaultBusyTimeout
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	return c
}
