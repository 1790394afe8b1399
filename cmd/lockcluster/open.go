package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/cmd/lockcluster/internal/cliexplain"
	"github.com/zerotal/lock/cmd/lockcluster/internal/cliflags"
)

// driverFlags select and configure the backend of run, elect, leader,
// bench and locks. Each is the command line's form of a variable
// lock.ConfigFromEnv reads (--endpoints: LOCKCLUSTER_ENDPOINTS), and the
// library's function chooses the backend from them (config), so that the
// command and a program given the same settings lock on the same backend.
type driverFlags struct {
	clientTLSFlags
	flags *pflag.FlagSet // the command's, read by config
	// noKeyPrefix leaves out --prefix, the key prefix, for a command whose
	// --prefix means something else (locks' filter); LOCKCLUSTER_PREFIX
	// still sets the key prefix.
	noKeyPrefix bool
}

func (d *driverFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	d.flags = fs
	fs.String("driver", "", "backend: cluster, sqlite, redis (URL from the variable REDIS_URL), postgres (URL from\n"+
		"LOCKCLUSTER_POSTGRES_URL or DATABASE_URL) or memory; unset, the one whose setting is given\n"+
		"(--endpoints, --sqlite-path, REDIS_URL or LOCKCLUSTER_POSTGRES_URL), as lock.ConfigFromEnv chooses")
	fs.String("endpoints", "", "cluster: HTTP `address`(es) of the nodes, comma-separated")
	fs.String("token", "", "cluster: bearer token (prefer the variable: flags show in the process list)")
	fs.String("sqlite-path", "", "sqlite: database `file` shared by the processes")
	if !d.noKeyPrefix {
		fs.String("prefix", "", "key prefix (default \"zerotal_lock:\", none on the cluster)")
	}
	d.clientTLSFlags.register(cmd)
	_ = cmd.RegisterFlagCompletionFunc("driver", func(c *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		drivers := []cobra.Completion{"cluster", "sqlite", "redis", "postgres"}
		if c.Name() == "bench" { // run, elect and leader refuse memory: its locks exclude no other process
			drivers = append(drivers, "memory")
		}
		return drivers, cobra.ShellCompDirectiveNoFileComp
	})
	readsEnv(cmd, true)
}

// config returns the lock.Config the command opens: the one
// lock.ConfigFromGetenv chooses, with the flags in place of their
// variables. REDIS_URL has no flag on purpose (a URL with a password does
// not belong in the process list), nor LOCKCLUSTER_SQLITE_DURABLE: both
// come from the environment. A choice that fails (two backends set, a
// value refused) is carried by the Config, and openManager returns it.
func (d *driverFlags) config(e *env) lock.Config {
	cfg, _ := lock.ConfigFromGetenv(flagsOver(d.flags, e.getenv))
	return cfg
}

// flagsOver is getenv with each connection flag of fs read in place of its
// variable. The flags already hold their variables (cliflags.ApplyEnv)
// unless the command line gave them, so the command line wins.
func flagsOver(fs *pflag.FlagSet, getenv func(string) string) func(string) string {
	byVar := map[string]*pflag.Flag{}
	fs.VisitAll(func(f *pflag.Flag) {
		// A flag kept from the environment is not its variable's (locks'
		// --prefix filter is not LOCKCLUSTER_PREFIX).
		if cliflags.ConnectionFlags[f.Name] && !cliflags.IsNoEnv(f) {
			byVar[cliflags.EnvName(f.Name)] = f
		}
	})
	return func(name string) string {
		if f, ok := byVar[name]; ok {
			return f.Value.String()
		}
		return getenv(name)
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
	"--driver postgres with LOCKCLUSTER_POSTGRES_URL, or --driver sqlite with --sqlite-path FILE (or LOCKCLUSTER_SQLITE_PATH) for the processes of one host")

// requireShared refuses a backend whose locks no other process sees
// (privateBackend), as run, elect and leader do.
func requireShared(cfg lock.Config) error {
	if why, private := privateBackend(cfg); private {
		return fmt.Errorf("%s: %w", why, errNotShared)
	}
	return nil
}

// privateBackend says why cfg keeps its locks where no other process sees
// them: the memory driver, chosen or the default, and a sqlite database
// private to one handle (":memory:"); and sqlite without a path, whose
// library hint offers ":memory:". private is false for any other Config,
// valid or not (openManager says what is wrong with it).
func privateBackend(cfg lock.Config) (why string, private bool) {
	if err := cfg.Validate(); err != nil {
		if ie, ok := errors.AsType[*lock.InvalidError](err); ok && ie.Field == "SQLite.Path" && strings.HasPrefix(ie.Reason, "is required") {
			// The library's hint offers ":memory:", which is refused
			// here: the caller names the backends that work instead.
			return "--driver sqlite needs --sqlite-path FILE (or LOCKCLUSTER_SQLITE_PATH)", true
		}
		return "", false
	}
	switch cfg.Driver {
	case "":
		return "no backend is set (--driver, --endpoints, --sqlite-path or REDIS_URL), and without one the locks are kept in this one process", true
	case "memory":
		return "--driver memory keeps its locks in this one process", true
	case "sqlite":
		if cfg.SQLite.Path == ":memory:" {
			return "--sqlite-path :memory: keeps its locks in a database private to this process", true
		}
	}
	return "", false
}
