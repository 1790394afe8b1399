package redis_test

import (
	"context"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers/redis"
)

// Open a driver from a URL and use it through the Manager. (Not run: it
// needs a Redis server.)
func ExampleOpen() {
	ctx := context.Background()
	d, err := redis.Open(ctx, redis.Config{URL: "redis://:secret@localhost:6379/0"})
	if err != nil {
		fmt.Println(err)
		return
	}
	m := lock.New(d)
	defer m.Close()

	err = m.Try(ctx, "invoice:123", 10*time.Second, func(ctx context.Context, l *lock.Lock) error {
		fmt.Println("holding fence", l.Fence())
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
}

// New uses a client the application already has, here a cluster client.
// The driver never closes it.
func ExampleNew() {
	client := goredis.NewClusterClient(&goredis.ClusterOptions{
		Addrs: []string{"redis-1:6379", "redis-2:6379", "redis-3:6379"},
	})
	defer client.Close()
	d, err := redis.New(client, redis.WithPollInterval(2*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
}
