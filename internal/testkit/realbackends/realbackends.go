// Package realbackends opens a lock.Manager on each of the backends, as
// real processes and files, for the tests that check a behaviour on all of
// them: All, the four that every such test runs on, and Every, which adds
// PostgreSQL.
package realbackends

import (
	"path/filepath"
	"testing"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/cluster/clustertest"
	_ "github.com/zerotal/lock/drivers/cluster"  // the "cluster" driver of lock.Open
	_ "github.com/zerotal/lock/drivers/postgres" // the "postgres" driver of lock.Open
	"github.com/zerotal/lock/drivers/postgres/pgtest"
	_ "github.com/zerotal/lock/drivers/redis" // the "redis" driver of lock.Open
	"github.com/zerotal/lock/drivers/redis/redistest"
	_ "github.com/zerotal/lock/drivers/sqlite" // the "sqlite" driver of lock.Open
)

// Backend is one backend by name and how a test opens a Manager on it.
type Backend struct {
	Name string
	Open func(t *testing.T) *lock.Manager
}

// All is memory, a SQLite file in the test's temporary directory, a
// redis-server and a one-node lockcluster, each started for the test that
// opens it.
func All() []Backend {
	return []Backend{
		{"memory", func(t *testing.T) *lock.Manager { return Open(t, lock.Config{}) }},
		{"sqlite", func(t *testing.T) *lock.Manager {
			return Open(t, lock.Config{Driver: "sqlite", SQLite: lock.SQLiteConfig{Path: filepath.Join(t.TempDir(), "locks.db")}})
		}},
		{"redis", func(t *testing.T) *lock.Manager {
			return Open(t, lock.Config{Driver: "redis", Redis: lock.RedisConfig{URL: redistest.Start(t).URL()}})
		}},
		{"cluster", func(t *testing.T) *lock.Manager {
			return Open(t, lock.Config{Driver: "cluster", Cluster: lock.ClusterConfig{Addrs: clustertest.Start(t, 1, nil).Addrs()}})
		}},
	}
}

// Postgres is a PostgreSQL server (pgtest: initdb in the test's temporary
// directory, on a free loopback port), started for the test that opens it.
func Postgres() Backend {
	return Backend{"postgres", func(t *testing.T) *lock.Manager {
		return Open(t, lock.Config{Driver: "postgres", Postgres: lock.PostgresConfig{URL: pgtest.Start(t).URL()}})
	}}
}

// Every is All and Postgres: every backend of this module, for a
// behaviour each of them must have.
func Every() []Backend { return append(All(), Postgres()) }

// Each runs check as a parallel subtest, named after the backend, on a
// Manager of each of bs.
func Each(t *testing.T, bs []Backend, check func(t *testing.T, name string, m *lock.Manager)) {
	t.Helper()
	for _, b := range bs {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			check(t, b.Name, b.Open(t))
		})
	}
}

// Open opens a Manager of cfg that is closed when t ends.
func Open(t *testing.T, cfg lock.Config) *lock.Manager {
	t.Helper()
	m, err := lock.Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Open %s: %v", cfg.Driver, err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}
