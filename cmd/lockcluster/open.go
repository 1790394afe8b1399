package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/cmd/lockcluster/internal/cliexplain"
)

// driverFlags select and configure the backend of run and bench: the
// fields of lock.Config, from the same variables lock.ConfigFromEnv reads.
type driverFlags struct {
	clientTLSFlags
	driver     string
	endpoints  string
	token      string
	sqlitePath string
	prefix     string
}

func (d *driverFlags) register(cmd *cobra.Command, defDriver string) {
	fs := cmd.Flags()
	fs.SortFlags = false
	fs.StringVar(&d.driver, "driver", defDriver, "backend: memory, sqlite, redis (URL from the variable REDIS_URL) or cluster")
	fs.StringVar(&d.endpoints, "endpoints", "", "cluster: HTTP `address`(es) of the nodes, comma-separated")
	fs.StringVar(&d.token, "token", "", "cluster: bearer token (prefer the variable: flags show in the process list)")
	fs.StringVar(&d.sqlitePath, "sqlite-path", "", "sqlite: database `file` shared by the processes")
	fs.StringVar(&d.prefix, "prefix", "", "key prefix (default \"zerotal_lock:\", none on the cluster)")
	d.clientTLSFlags.register(cmd)
	_ = cmd.RegisterFlagCompletionFunc("driver", func(c *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		drivers := []cobra.Completion{"cluster", "sqlite", "redis"}
		if c.Name() != "run" { // run refuses memory: its locks exclude no other process
			drivers = append(drivers, "memory")
		}
		return drivers, cobra.ShellCompDirectiveNoFileComp
	})
	readsEnv(cmd, true)
}

// config returns the lock.Config of the flags. REDIS_URL has no flag on
// purpose: a URL with a password does not belong in the process list.
func (d *driverFlags) config(e *env) lock.Config {
	return lock.Config{
		Driver: d.driver,
		Prefix: d.prefix,
		SQLite: lock.SQLiteConfig{Path: d.sqlitePath},
		Redis:  lock.RedisConfig{URL: e.getenv(lock.EnvRedisURL)},
		Cluster: lock.ClusterConfig{
			Addrs:     splitList(d.endpoints),
			Token:     d.token,
			CAFile:    d.ca,
			CertFile:  d.cert,
			KeyFile:   d.key,
			ClusterID: d.clusterID,
		},
	}
}

// openManager opens the backend through lock.Open, which validates cfg
// first (a bad flag is an ErrInvalid error, exit status 64).
func openManager(ctx context.Context, cfg lock.Config) (*lock.Manager, error) {
	return lock.Open(ctx, cfg)
}

// explainManager is cliexplain.ExplainUnavailable for a Manager on the cluster
// driver; ok is false on other drivers.
func explainManager(ctx context.Context, m *lock.Manager, cfg lock.Config) (string, int, bool) {
	c, _ := m.Driver().(cliexplain.NodeStatuser)
	return cliexplain.ExplainUnavailable(context.WithoutCancel(ctx), c, cfg.Cluster.Addrs)
}

// errNotShared is run's refusal of a backend whose locks no other process
// sees: run exists to keep processes apart, and would exclude nothing.
var errNotShared = errors.New("locks that no other process sees would exclude nothing; " +
	"use --driver cluster with --endpoints (or LOCKCLUSTER_ENDPOINTS), --driver redis with REDIS_URL, " +
	"or --driver sqlite with --sqlite-path FILE (or LOCKCLUSTER_SQLITE_PATH) for the processes of one host")

// requireShared refuses the memory driver and a sqlite driver without a
// file (the library's default, ":memory:", is private to one handle).
func requireShared(cfg lock.Config) error {
	switch cfg.Driver {
	case "", "memory":
		return fmt.Errorf("--driver memory keeps its locks in this one process: %w", errNotShared)
	case "sqlite":
		if cfg.SQLite.Path == "" || cfg.SQLite.Path == ":memory:" {
			return fmt.Errorf("--driver sqlite without --sqlite-path keeps its locks in a private in-memory database: %w", errNotShared)
		}
	}
	return nil
}
