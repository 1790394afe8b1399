package lock

import (
	"os"
	"strings"
)

// Environment variables read by ConfigFromEnv.
const (
	EnvDriver       = "LOCK_DRIVER"
	EnvPrefix       = "LOCK_PREFIX"
	EnvSQLitePath   = "LOCK_SQLITE_PATH"
	EnvRedisURL     = "REDIS_URL"
	EnvClusterAddrs = "LOCK_CLUSTER_ADDRS" // comma separated
	EnvClusterToken = "LOCK_CLUSTER_TOKEN"
	EnvClusterCA    = "LOCK_CLUSTER_CA"   // PEM file of the CA of a TLS cluster
	EnvClusterCert  = "LOCK_CLUSTER_CERT" // PEM client certificate (mutual TLS)
	EnvClusterKey   = "LOCK_CLUSTER_KEY"  // its PEM key
	EnvClusterID    = "LOCK_CLUSTER_ID"   // the cluster ID the nodes must have
)

// ConfigFromEnv builds a Config from the environment: LOCK_DRIVER,
// LOCK_PREFIX, LOCK_SQLITE_PATH, REDIS_URL, LOCK_CLUSTER_ADDRS (comma
// separated), LOCK_CLUSTER_TOKEN, and for a TLS cluster LOCK_CLUSTER_CA,
// LOCK_CLUSTER_CERT and LOCK_CLUSTER_KEY, and LOCK_CLUSTER_ID. Unset
// variables leave their field at its default. The result is validated; the error never contains the Redis
// URL or the token.
//
// When LOCK_DRIVER is unset and LOCK_CLUSTER_ADDRS names nodes, the driver
// is "cluster": a process pointed at a cluster must not quietly take its
// locks in its own memory, where no other process sees them. (REDIS_URL
// selects nothing by itself: applications set it for other uses too.)
func ConfigFromEnv() (Config, error) {
	cfg := Config{
		Driver: strings.TrimSpace(os.Getenv(EnvDriver)),
		Prefix: os.Getenv(EnvPrefix),
		SQLite: SQLiteConfig{Path: os.Getenv(EnvSQLitePath)},
		Redis:  RedisConfig{URL: strings.TrimSpace(os.Getenv(EnvRedisURL))},
		Cluster: ClusterConfig{
			Addrs:     splitList(os.Getenv(EnvClusterAddrs)),
			Token:     os.Getenv(EnvClusterToken),
			CAFile:    strings.TrimSpace(os.Getenv(EnvClusterCA)),
			CertFile:  strings.TrimSpace(os.Getenv(EnvClusterCert)),
			KeyFile:   strings.TrimSpace(os.Getenv(EnvClusterKey)),
			ClusterID: strings.TrimSpace(os.Getenv(EnvClusterID)),
		},
	}
	if cfg.Driver == "" && len(cfg.Cluster.Addrs) > 0 {
		cfg.Driver = "cluster"
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
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
