package redislock

import (
	"context"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/zerotal/lock"
	zredis "github.com/zerotal/lock/drivers/redis"
)

// setup is how both libraries are opened for one row of figures.
type setup struct {
	name string
	// open returns redislock and zerotal, each on a client of its own,
	// for a scenario of the given number of workers; both are closed
	// when b ends.
	open func(b *testing.B, url string, workers int) (base, ours locker)
}

var setups = []setup{
	{name: "defaults", open: openDefaults},
	{name: "equalpool", open: openEqualPool},
}

// openDefaults opens each library the way its README does, with default
// settings: redislock on a go-redis client from the URL (pool of
// 10 × GOMAXPROCS connections), zerotal through lock.Open with the URL
// (the same go-redis defaults, plus the driver's own: no retries, calls
// bounded by their context).
func openDefaults(b *testing.B, url string, _ int) (locker, locker) {
	opts, err := goredis.ParseURL(url)
	if err != nil {
		b.Fatal(err)
	}
	client := goredis.NewClient(opts)
	b.Cleanup(func() { _ = client.Close() })
	m, err := lock.Open(context.Background(), lock.Config{Driver: "redis", Redis: lock.RedisConfig{URL: url}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = m.Close() })
	return newBSM(client), &zerotalLocker{m: m}
}

// openEqualPool gives each library a go-redis client with the very same
// options: one pooled connection per worker (PoolSize = MinIdleConns =
// workers), go-redis's default timeouts and retries. redislock.New and
// zerotal's redis.New (wrapped in lock.New) take it as an application
// would hand over a client it already has.
func openEqualPool(b *testing.B, url string, workers int) (locker, locker) {
	newClient := func() *goredis.Client {
		opts, err := goredis.ParseURL(url)
		if err != nil {
			b.Fatal(err)
		}
		opts.PoolSize, opts.MinIdleConns = workers, workers
		c := goredis.NewClient(opts)
		b.Cleanup(func() { _ = c.Close() })
		return c
	}
	base := newBSM(newClient())
	d, err := zredis.New(newClient())
	if err != nil {
		b.Fatal(err)
	}
	m := lock.New(d)
	b.Cleanup(func() { _ = m.Close() })
	return base, &zerotalLocker{m: m}
}
