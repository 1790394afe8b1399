package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/zerotal/lock"
)

// driverFlags select and configure the backend of run and bench. They
// start from lock.ConfigFromEnv and override it.
type driverFlags struct {
	clientTLSFlags
	driver     string
	addrs      string
	token      string
	sqlitePath string
	prefix     string
}

func (d *driverFlags) register(fs *flagSet, e *env, defDriver string) {
	fs.StringVar(&d.driver, "driver", envOr(e, defDriver, lock.EnvDriver), "backend: memory, sqlite, redis (URL from env REDIS_URL) or cluster (env LOCK_DRIVER)")
	fs.StringVar(&d.addrs, "addrs", envOr(e, "", lock.EnvClusterAddrs), "cluster: HTTP addresses of the nodes, comma-separated (env LOCK_CLUSTER_ADDRS)")
	fs.StringVar(&d.token, "token", "", "cluster: bearer token (default: env LOCK_CLUSTER_TOKEN)")
	fs.StringVar(&d.sqlitePath, "sqlite-path", envOr(e, "", lock.EnvSQLitePath), "sqlite: database file shared by the processes (env LOCK_SQLITE_PATH)")
	fs.StringVar(&d.prefix, "prefix", envOr(e, "", lock.EnvPrefix), "key prefix (env LOCK_PREFIX; default \"zerotal_lock:\", none on the cluster)")
	d.clientTLSFlags.register(fs, e)
}

// config returns lock.ConfigFromEnv with the flags applied. REDIS_URL has
// no flag on purpose: a URL with a password does not belong in the process
// list.
func (d *driverFlags) config(e *env) lock.Config {
	cfg := lock.Config{
		Driver: d.driver,
		Prefix: d.prefix,
		SQLite: lock.SQLiteConfig{Path: d.sqlitePath},
		Redis:  lock.RedisConfig{URL: e.getenv(lock.EnvRedisURL)},
		Cluster: lock.ClusterConfig{
			Addrs:    splitList(d.addrs),
			Token:    d.token,
			CAFile:   d.ca,
			CertFile: d.cert, KeyFile: d.key,
			ClusterID: d.clusterID,
		},
	}
	if cfg.Cluster.Token == "" {
		cfg.Cluster.Token = envOr(e, "", lock.EnvClusterToken, "LOCKCLUSTER_TOKEN")
	}
	return cfg
}

// openManager opens the backend through lock.Open, which validates cfg
// first (a bad flag is an ErrInvalid error, exit status 64).
func openManager(ctx context.Context, cfg lock.Config) (*lock.Manager, error) {
	return lock.Open(ctx, cfg)
}

// errNotShared is run's refusal of a backend whose locks no other process
// sees: run exists to keep processes apart, and would exclude nothing.
var errNotShared = errors.New("locks that no other process sees would exclude nothing; " +
	"use --driver cluster with --addrs (or LOCK_CLUSTER_ADDRS), --driver redis with REDIS_URL, " +
	"or --driver sqlite with --sqlite-path FILE (or LOCK_SQLITE_PATH) for the processes of one host")

// requireShared refuses the memory driver and a sqlite driver without a
// file (the library's default, ":memory:", is private to one handle).
func requireShared(cfg lock.Config) error {
	switch cfg.Driver {
	case "", "memory":
		return fmt.Errorf("--driver memory keeps its locks in this one process: %w", errNotShared)
	case "sqlite":
		if cfg.SQLite.Path == "" || cfg.SQLite.Path == lock.DefaultSQLitePath {
			return fmt.Errorf("--driver sqlite without --sqlite-path keeps its locks in a private in-memory database: %w", errNotShared)
		}
	}
	return nil
}
