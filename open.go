package lock

import (
	"context"
	"fmt"
	"slices"

	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/memory"
	"github.com/zerotal/lock/drivers/redis"
	"github.com/zerotal/lock/drivers/sqlite"
)

// opener opens one kind of driver from a validated Config (defaults
// applied).
type opener func(ctx context.Context, cfg Config) (drivers.Driver, error)

// openers lists every driver name Open knows; a nil opener is a driver this
// build does not include.
var openers = map[string]opener{
	"memory":  openMemory,
	"sqlite":  openSQLite,
	"redis":   openRedis,
	"cluster": openCluster,
}

func driverNames() []string {
	names := make([]string, 0, len(openers))
	for name := range openers {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Open opens the driver cfg selects and returns a Manager that owns it.
// cfg is validated first (see Config.Validate); ctx bounds connecting to
// the backend.
func Open(ctx context.Context, cfg Config) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := cfg.withDefaults()
	open := openers[c.Driver]
	if open == nil {
		return nil, fmt.Errorf("lock: driver %q is not available in this build", c.Driver)
	}
	d, err := open(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("lock: open %s driver: %w", c.Driver, err)
	}
	opts := []ManagerOption{WithLogger(c.Logger)}
	if c.Prefix != "" {
		opts = append(opts, WithPrefix(c.Prefix))
	}
	return New(d, opts...), nil
}

func openMemory(_ context.Context, _ Config) (drivers.Driver, error) {
	return memory.New(memory.Config{})
}

func openSQLite(ctx context.Context, c Config) (drivers.Driver, error) {
	return sqlite.Open(ctx, sqlite.Config{Path: c.SQLite.Path})
}

func openRedis(ctx context.Context, c Config) (drivers.Driver, error) {
	return redis.Open(ctx, redis.Config{URL: c.Redis.URL})
}

func openCluster(_ context.Context, c Config) (drivers.Driver, error) {
	return client.New(client.Config{
		Addrs: c.Cluster.Addrs, Token: c.Cluster.Token, Logger: c.Logger,
		CAFile: c.Cluster.CAFile, CertFile: c.Cluster.CertFile, KeyFile: c.Cluster.KeyFile,
		ClusterID: c.Cluster.ClusterID,
	})
}
