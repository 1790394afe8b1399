package main

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/internal/loopback"
	"github.com/zerotal/lock/internal/testkit/syncbuf"
)

// backendCase is one environment and command line, and the backend the
// library and every lockcluster command that locks must choose from it.
type backendCase struct {
	name  string
	env   map[string]string // the process environment
	flags []string          // the command line's connection flags
	// driver is the backend chosen; "" for a refusal (ErrInvalid) whose
	// message names every variable in names.
	driver string
	names  []string
	// What "lockcluster leader NAME" ends with: its exit status, and a
	// piece of what it prints that tells the backend it used.
	code int
	says string
}

// backendCases walks the ways to name a backend: none, each backend's
// variable alone, two at once, and flags over variables.
func backendCases(t *testing.T) []backendCase {
	db := filepath.Join(t.TempDir(), "locks.db")
	redisURL := "redis://" + loopback.MustFreeAddr(t) + "/0" // nobody listens
	endpoints := loopback.MustFreeAddr(t)                    // nobody listens
	return []backendCase{
		{name: "none set", driver: "memory", code: exitUsage, says: "in this one process"},
		{name: "sqlite path", env: map[string]string{lock.EnvSQLitePath: db}, driver: "sqlite", code: exitNotAcquired, says: "no leader"},
		{name: "redis URL", env: map[string]string{lock.EnvRedisURL: redisURL}, driver: "redis", code: exitUnavailable, says: "redis"},
		{name: "endpoints", env: map[string]string{lock.EnvEndpoints: endpoints}, driver: "cluster", code: exitUnavailable, says: "cannot reach the cluster"},
		{name: "sqlite path and redis URL", env: map[string]string{lock.EnvSQLitePath: db, lock.EnvRedisURL: redisURL},
			names: []string{lock.EnvSQLitePath, lock.EnvRedisURL}, code: exitUsage, says: lock.EnvRedisURL},
		{name: "endpoints and redis URL", env: map[string]string{lock.EnvEndpoints: endpoints, lock.EnvRedisURL: redisURL},
			names: []string{lock.EnvEndpoints, lock.EnvRedisURL}, code: exitUsage, says: lock.EnvEndpoints},
		{name: "the driver variable picks one of two", env: map[string]string{lock.EnvDriver: "sqlite", lock.EnvSQLitePath: db, lock.EnvRedisURL: redisURL},
			driver: "sqlite", code: exitNotAcquired, says: "no leader"},
		{name: "--sqlite-path alone", flags: []string{"--sqlite-path", db}, driver: "sqlite", code: exitNotAcquired, says: "no leader"},
		{name: "--driver over the driver variable", env: map[string]string{lock.EnvDriver: "redis", lock.EnvRedisURL: redisURL},
			flags: []string{"--driver", "sqlite", "--sqlite-path", db}, driver: "sqlite", code: exitNotAcquired, says: "no leader"},
		{name: "--driver picks one of two", env: map[string]string{lock.EnvRedisURL: redisURL},
			flags: []string{"--driver", "sqlite", "--sqlite-path", db}, driver: "sqlite", code: exitNotAcquired, says: "no leader"},
		{name: "--endpoints over the variable", env: map[string]string{lock.EnvEndpoints: "127.0.0.1:1"},
			flags: []string{"--endpoints", endpoints}, driver: "cluster", code: exitUnavailable, says: endpoints},
		{name: "--endpoints beside a redis URL", env: map[string]string{lock.EnvRedisURL: redisURL},
			flags: []string{"--endpoints", endpoints}, names: []string{lock.EnvEndpoints, lock.EnvRedisURL}, code: exitUsage, says: lock.EnvRedisURL},
		{name: "--driver memory", env: map[string]string{lock.EnvEndpoints: endpoints},
			flags: []string{"--driver", "memory"}, driver: "memory", code: exitUsage, says: "in this one process"},
	}
}

// libraryEnv is the environment the library reads for c: c's variables,
// each flag given as the variable of its name (--sqlite-path:
// LOCKCLUSTER_SQLITE_PATH), the command line winning.
func (c backendCase) libraryEnv() map[string]string {
	env := maps.Clone(c.env)
	if env == nil {
		env = map[string]string{}
	}
	for i := 0; i+1 < len(c.flags); i += 2 {
		env["LOCKCLUSTER_"+strings.ToUpper(strings.ReplaceAll(strings.TrimPrefix(c.flags[i], "--"), "-", "_"))] = c.flags[i+1]
	}
	return env
}

// The real binary, "leader NAME", in every case: it opens the backend the
// library would, or refuses as the library does.
func TestCLI_BinaryChoosesTheLibrarysBackend(t *testing.T) {
	for _, c := range backendCases(t) {
		t.Run(c.name, func(t *testing.T) {
			var env []string
			for k, v := range c.env {
				env = append(env, k+"="+v)
			}
			code, stdout, stderr := runBinary(t, env, append(append([]string{"leader"}, c.flags...), "deploy")...)
			if code != c.code || !strings.Contains(stdout+stderr, c.says) {
				t.Fatalf("exit status %d, want %d, saying %q; stdout %q, stderr %q", code, c.code, c.says, stdout, stderr)
			}
		})
	}
}

// The library (lock.ConfigFromEnv) and each command that locks (its
// flags parsed and its variables applied by the real command tree)
// choose the same Config from the same settings, or refuse them alike.
func TestCLI_ChoosesTheLibrarysBackend(t *testing.T) {
	for _, c := range backendCases(t) {
		t.Run(c.name, func(t *testing.T) {
			for _, v := range []string{lock.EnvDriver, lock.EnvPrefix, lock.EnvSQLitePath, lock.EnvSQLiteDurable, lock.EnvRedisURL,
				lock.EnvEndpoints, lock.EnvToken, lock.EnvTLSCA, lock.EnvTLSCert, lock.EnvTLSKey, lock.EnvClusterID} {
				t.Setenv(v, "")
			}
			for k, v := range c.libraryEnv() {
				t.Setenv(k, v)
			}
			lib, libErr := lock.ConfigFromEnv()
			switch {
			case c.driver == "" && !errors.Is(libErr, lock.ErrInvalid):
				t.Fatalf("library: %v, %v; want ErrInvalid", lib, libErr)
			case c.driver != "" && (libErr != nil || driverOf(lib) != c.driver):
				t.Fatalf("library: %v, %v; want driver %s", lib, libErr, c.driver)
			}
			for _, name := range c.names {
				if !strings.Contains(libErr.Error(), name) {
					t.Errorf("library: the refusal does not name %s: %v", name, libErr)
				}
			}
			for _, command := range [][]string{{"run", "--key", "k", "--", "true"}, {"elect", "n", "--", "true"}, {"leader", "n"}, {"bench"}} {
				got := cliConfig(t, c.env, command[0], append(append([]string(nil), c.flags...), command[1:]...))
				if got.String() != lib.String() || got.Cluster.Token != lib.Cluster.Token || got.SQLite.Durable != lib.SQLite.Durable {
					t.Errorf("%s chose %v, the library %v", command[0], got, lib)
				}
				if err := got.Validate(); (err == nil) != (libErr == nil) || (err != nil && err.Error() != libErr.Error()) {
					t.Errorf("%s: Validate = %v, the library's error %v", command[0], err, libErr)
				}
			}
		})
	}
}

// driverOf is the driver cfg opens.
func driverOf(cfg lock.Config) string {
	if cfg.Driver == "" {
		return lock.DefaultDriver
	}
	return cfg.Driver
}

// cliConfig is the lock.Config the command name of lockcluster's real
// command tree chooses from vars and args: its RunE is replaced by one
// that reads the choice, after the flags were parsed and the variables
// applied as in any run.
func cliConfig(t *testing.T, vars map[string]string, name string, args []string) lock.Config {
	t.Helper()
	var out, errb syncbuf.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb,
		getenv: func(k string) string { return vars[k] }, environ: []string{"PATH=" + os.Getenv("PATH")}, self: "lockcluster"}
	root := newRootCmd(e)
	cmd, _, err := root.Find([]string{name})
	if err != nil || cmd.Name() != name {
		t.Fatalf("no command %s: %v", name, err)
	}
	var got *lock.Config
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg := (&driverFlags{flags: cmd.Flags()}).config(e)
		got = &cfg
		return nil
	}
	root.SetArgs(append([]string{name}, args...))
	root.SetOut(&out)
	root.SetErr(&errb)
	if err := root.ExecuteContext(t.Context()); err != nil || got == nil {
		t.Fatalf("%s %q: %v; stderr %s", name, args, err, errb.String())
	}
	return *got
}
