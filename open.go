package lock

import (
	"context"
	"fmt"

	"github.com/zerotal/lock/drivers"
	_ "github.com/zerotal/lock/drivers/memory" // the default driver is always linked
)

// Open opens the driver cfg selects and returns a Manager that owns it.
// cfg is validated first (see Config.Validate); ctx bounds connecting to
// the backend: the redis and cluster drivers return only once the backend
// has answered, with an error matching ErrUnavailable when it does not.
//
// Only the memory driver is linked into every program. The others register
// themselves when their package is imported, as database/sql drivers do:
//
//	import _ "github.com/zerotal/lock/drivers/sqlite"
//	import _ "github.com/zerotal/lock/drivers/redis"
//	import _ "github.com/zerotal/lock/drivers/cluster"
//
// Opening a driver whose package is not imported fails with a
// *drivers.NotLinkedError that names the import (it matches ErrNotLinked
// and ErrInvalid), so that a program carries only the backends it uses.
func Open(ctx context.Context, cfg Config) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := cfg.withDefaults()
	open, err := drivers.Lookup(c.Driver)
	if err != nil {
		return nil, err
	}
	d, err := open(ctx, c.openOptions())
	if err != nil {
		return nil, fmt.Errorf("lock: open %s driver: %w", c.Driver, err)
	}
	opts := []ManagerOption{WithLogger(c.Logger)}
	if c.Prefix != "" {
		opts = append(opts, WithPrefix(c.Prefix))
	}
	if c.Holder != "" {
		opts = append(opts, WithHolder(c.Holder))
	}
	return New(d, opts...), nil
}

// openOptions is what a driver's Opener reads of c (defaults applied).
func (c Config) openOptions() drivers.OpenOptions {
	return drivers.OpenOptions{
		SQLitePath: c.SQLite.Path, SQLiteDurable: c.SQLite.Durable,
		RedisURL: c.Redis.URL, PostgresURL: c.Postgres.URL,
		Cluster: drivers.ClusterOptions{
			Addrs: c.Cluster.Addrs, Token: c.Cluster.Token,
			CAFile: c.Cluster.CAFile, CertFile: c.Cluster.CertFile, KeyFile: c.Cluster.KeyFile,
			ClusterID: c.Cluster.ClusterID,
		},
		Logger: c.Logger,
	}
}
