package lock

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Environment variables read by ConfigFromEnv. They are one family with
// the lockcluster command's: LOCKCLUSTER_ and the name of the flag of the
// same meaning (--driver, --endpoints, --token, --tls-ca ...), so that one
// set of variables configures the library and the command. REDIS_URL keeps
// its usual name; it has no flag, since it may hold a password.
const (
	EnvDriver     = "LOCKCLUSTER_DRIVER"
	EnvPrefix     = "LOCKCLUSTER_PREFIX"
	EnvSQLitePath = "LOCKCLUSTER_SQLITE_PATH"
	// EnvSQLiteDurable is true or false (strconv.ParseBool): SQLiteConfig.Durable.
	EnvSQLiteDurable = "LOCKCLUSTER_SQLITE_DURABLE"
	EnvRedisURL      = "REDIS_URL"
	EnvEndpoints     = "LOCKCLUSTER_ENDPOINTS"  // comma separated
	EnvToken         = "LOCKCLUSTER_TOKEN"      // bearer token of the cluster
	EnvTLSCA         = "LOCKCLUSTER_TLS_CA"     // PEM file of the CA of a TLS cluster
	EnvTLSCert       = "LOCKCLUSTER_TLS_CERT"   // PEM client certificate (mutual TLS)
	EnvTLSKey        = "LOCKCLUSTER_TLS_KEY"    // its PEM key
	EnvClusterID     = "LOCKCLUSTER_CLUSTER_ID" // the cluster ID the nodes must have
)

// The postgres driver's connection string: LOCKCLUSTER_POSTGRES_URL, or
// DATABASE_URL as most platforms set it (see ConfigFromEnv for when).
const (
	EnvPostgresURL = "LOCKCLUSTER_POSTGRES_URL"
	EnvDatabaseURL = "DATABASE_URL"
)

// ConfigFromEnv builds a Config from the environment: LOCKCLUSTER_DRIVER,
// LOCKCLUSTER_PREFIX, LOCKCLUSTER_SQLITE_PATH, LOCKCLUSTER_SQLITE_DURABLE,
// REDIS_URL, LOCKCLUSTER_POSTGRES_URL (or DATABASE_URL),
// LOCKCLUSTER_ENDPOINTS (comma separated), LOCKCLUSTER_TOKEN,
// and for a TLS cluster LOCKCLUSTER_TLS_CA, LOCKCLUSTER_TLS_CERT and
// LOCKCLUSTER_TLS_KEY, and LOCKCLUSTER_CLUSTER_ID. Unset variables leave
// their field at its default. The result is validated; the error (matching
// ErrInvalid) names the variable and never contains the Redis URL or the
// token.
//
// On an error the Config returned carries it and is never usable: its
// Validate and Open return that error, whatever is set on it afterwards,
// so that a program that drops the error (cfg, _ := ConfigFromEnv())
// does not lock in its own memory. Build a new Config to choose otherwise.
//
// When LOCKCLUSTER_DRIVER is unset, the backend is the one the other
// variables point at: "cluster" for LOCKCLUSTER_ENDPOINTS, "sqlite" for
// LOCKCLUSTER_SQLITE_PATH, "redis" for REDIS_URL, "postgres" for
// LOCKCLUSTER_POSTGRES_URL, or for a postgres:// DATABASE_URL when no
// other of them is set. A process pointed at a
// shared backend must not quietly take its locks in its own memory, where
// no other process sees them. When more than one of them is set, nothing
// says which to lock on, and ConfigFromEnv refuses: set
// LOCKCLUSTER_DRIVER. With none of them, the driver is "memory".
func ConfigFromEnv() (Config, error) { return ConfigFromGetenv(os.Getenv) }

// ConfigFromGetenv is ConfigFromEnv with each variable read by getenv
// (an empty value is unset): the one place that decides the backend from
// these variables. The lockcluster command calls it with its flags layered
// over the environment (--endpoints for LOCKCLUSTER_ENDPOINTS and so on),
// so that the library and the command choose the same backend from the
// same settings.
func ConfigFromGetenv(getenv func(name string) string) (Config, error) {
	cfg, err := configFrom(getenv)
	if err != nil {
		return Config{err: err}, err
	}
	return cfg, nil
}

func configFrom(getenv func(string) string) (Config, error) {
	cfg := Config{
		Driver:   strings.TrimSpace(getenv(EnvDriver)),
		Prefix:   getenv(EnvPrefix),
		SQLite:   SQLiteConfig{Path: getenv(EnvSQLitePath)},
		Redis:    RedisConfig{URL: strings.TrimSpace(getenv(EnvRedisURL))},
		Postgres: PostgresConfig{URL: strings.TrimSpace(getenv(EnvPostgresURL))},
		Cluster: ClusterConfig{
			Addrs:     splitList(getenv(EnvEndpoints)),
			Token:     getenv(EnvToken),
			CAFile:    strings.TrimSpace(getenv(EnvTLSCA)),
			CertFile:  strings.TrimSpace(getenv(EnvTLSCert)),
			KeyFile:   strings.TrimSpace(getenv(EnvTLSKey)),
			ClusterID: strings.TrimSpace(getenv(EnvClusterID)),
		},
	}
	if v := strings.TrimSpace(getenv(EnvSQLiteDurable)); v != "" {
		durable, err := strconv.ParseBool(v)
		if err != nil {
			return Config{}, &InvalidError{Field: EnvSQLiteDurable, Reason: fmt.Sprintf("is %q; want true or false", v)}
		}
		cfg.SQLite.Durable = durable
	}
	if cfg.Postgres.URL == "" {
		cfg.Postgres.URL = databaseURL(getenv, cfg)
	}
	if cfg.Driver == "" {
		driver, err := inferDriver(cfg)
		if err != nil {
			return Config{}, err
		}
		cfg.Driver = driver
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// inferDriver is the driver the environment points at when
// LOCKCLUSTER_DRIVER is unset: the one backend whose variable is set.
func inferDriver(cfg Config) (string, error) {
	var driver string
	var set []string
	for _, b := range []struct {
		driver, env string
		set         bool
	}{
		{"cluster", EnvEndpoints, len(cfg.Cluster.Addrs) > 0},
		{"sqlite", EnvSQLitePath, cfg.SQLite.Path != ""},
		{"redis", EnvRedisURL, cfg.Redis.URL != ""},
		{"postgres", EnvPostgresURL, cfg.Postgres.URL != ""},
	} {
		if b.set {
			driver = b.driver
			set = append(set, b.env)
		}
	}
	switch len(set) {
	case 0:
		return "", nil // the default, memory
	case 1:
		return driver, nil
	}
	return "", &InvalidError{Field: EnvDriver, Reason: fmt.Sprintf(
		"is unset, and %s each name a backend: set it to the one to lock on (cluster, sqlite, redis, postgres or memory)",
		strings.Join(set, " and "))}
}

// databaseURL is DATABASE_URL for the postgres driver: when
// LOCKCLUSTER_DRIVER says postgres, or when it is unset, DATABASE_URL is
// a postgres:// URL and no other backend variable is set (a DATABASE_URL
// of another database is not a lock backend).
func databaseURL(getenv func(string) string, cfg Config) string {
	v := strings.TrimSpace(getenv(EnvDatabaseURL))
	switch {
	case cfg.Driver == "postgres":
		return v
	case cfg.Driver != "" || len(cfg.Cluster.Addrs) > 0 || cfg.SQLite.Path != "" || cfg.Redis.URL != "":
		return ""
	case strings.HasPrefix(v, "postgres://") || strings.HasPrefix(v, "postgresql://"):
		return v
	}
	return ""
}

// splitList splits a comma-separated list, dropping blanks.
func splitList(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
