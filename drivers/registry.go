package drivers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
)

// OpenOptions is what an Opener gets: the settings of package lock's Config
// for every backend, defaults applied and validated. Each driver reads its
// own section and ignores the others.
type OpenOptions struct {
	// SQLitePath is the database file of the "sqlite" driver.
	SQLitePath string
	// SQLiteDurable makes the "sqlite" driver's commits wait for the disk.
	SQLiteDurable bool
	// RedisURL is the server URL of the "redis" driver. It may hold a
	// password: never print it.
	RedisURL string
	// PostgresURL is the connection string of the "postgres" driver. It
	// may hold a password: never print it.
	PostgresURL string
	// Cluster configures the "cluster" driver.
	Cluster ClusterOptions
	// Logger receives the driver's logs; nil discards them (lock.Open
	// always passes one).
	Logger *slog.Logger
}

// ClusterOptions configures the "cluster" driver: see lock.ClusterConfig.
type ClusterOptions struct {
	Addrs     []string
	Token     string // never print it
	CAFile    string
	CertFile  string
	KeyFile   string
	ClusterID string
}

// Opener opens one kind of driver. ctx bounds connecting to the backend;
// an Opener that reaches a server checks that it answers before it
// returns.
type Opener func(ctx context.Context, o OpenOptions) (Driver, error)

// ErrNotLinked: the driver a configuration names exists, but its package is
// not imported by the program. Every error that matches it also matches
// ErrInvalid.
var ErrNotLinked = errors.New("lock: driver not linked")

// NotLinkedError says which import a program lacks to open Driver. It
// matches ErrNotLinked and ErrInvalid.
type NotLinkedError struct {
	Driver string
	Import string // the package path to import for its side effect
}

func (e *NotLinkedError) Error() string {
	return fmt.Sprintf("lock: driver %q is not linked into this program: add import _ %q", e.Driver, e.Import)
}

// Is makes errors.Is(err, ErrNotLinked) and errors.Is(err, ErrInvalid)
// true.
func (e *NotLinkedError) Is(target error) bool { return target == ErrNotLinked || target == ErrInvalid }

// packages maps the name of every driver of this module to the package
// that registers it when imported. A program links only the drivers it
// imports, so that one using the memory driver does not carry SQLite,
// Redis or the cluster client.
var packages = map[string]string{
	"memory":   "github.com/zerotal/lock/drivers/memory",
	"sqlite":   "github.com/zerotal/lock/drivers/sqlite",
	"redis":    "github.com/zerotal/lock/drivers/redis",
	"postgres": "github.com/zerotal/lock/drivers/postgres",
	"cluster":  "github.com/zerotal/lock/drivers/cluster",
}

var (
	registryMu sync.RWMutex
	openers    = map[string]Opener{}
)

// Register makes a driver available by name to lock.Open. A driver
// package calls it from its init function, as database/sql drivers do, so
// that importing the package is all a program does to use it. Register
// panics if open is nil or name is registered already: both are
// programming errors.
func Register(name string, open Opener) {
	if open == nil {
		panic("drivers: Register of a nil Opener for " + name)
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := openers[name]; dup {
		panic("drivers: Register called twice for driver " + name)
	}
	openers[name] = open
}

// Lookup returns the Opener registered under name. When there is none, the
// error is a *NotLinkedError for a driver of this module whose package the
// program does not import, and an *InvalidError naming the valid drivers
// otherwise.
func Lookup(name string) (Opener, error) {
	registryMu.RLock()
	open := openers[name]
	registryMu.RUnlock()
	if open != nil {
		return open, nil
	}
	if pkg, ok := packages[name]; ok {
		return nil, &NotLinkedError{Driver: name, Import: pkg}
	}
	return nil, &InvalidError{Field: "Driver", Reason: fmt.Sprintf("unknown driver %q; valid drivers: %s", name, strings.Join(Names(), ", "))}
}

// Names returns the names of the drivers this module provides and of every
// driver registered, sorted.
func Names() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	names := make([]string, 0, len(packages)+len(openers))
	for name := range packages {
		names = append(names, name)
	}
	for name := range openers {
		if _, ok := packages[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}
