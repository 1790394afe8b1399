package cliexplain

import (
	"errors"

	"github.com/zerotal/lock"
)

// DescribeConfig is Describe for the errors of lock.Open, naming the flag
// of a field of lock.Config.
func DescribeConfig(err error) string {
	var inv *lock.InvalidError
	if errors.As(err, &inv) {
		if flag, ok := configFlags[inv.Field]; ok {
			return flag + ": " + inv.Reason
		}
	}
	return Describe(err)
}

// configFlags are the flags (or variable) of the fields of lock.Config.
var configFlags = map[string]string{
	"Driver":                   "--driver",
	lock.EnvDriver:             "--driver", // two backends set and none chosen
	"Prefix":                   "--prefix",
	"SQLite.Path":              "--sqlite-path",
	"Redis.URL":                "REDIS_URL",
	"Postgres.URL":             "LOCKCLUSTER_POSTGRES_URL",
	"Cluster.Addrs":            "--endpoints",
	"Cluster.CertFile/KeyFile": "--tls-cert/--tls-key",
	// client.New's own (lock.Open makes the client)
	"client config CAFile":           "--tls-ca",
	"client config CertFile/KeyFile": "--tls-cert/--tls-key",
	"client config Addrs":            "--endpoints",
}
