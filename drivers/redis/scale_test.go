package redis_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/bench/manager"
	"github.com/zerotal/lock/drivers/redis"
	"github.com/zerotal/lock/drivers/redis/redistest"
)

// BenchmarkScaleHeld: the Redis driver at 1 k, 100 k and 1 M held locks
// on a redis-server of its own (make bench-scale). Memory is the server's
// used_memory (INFO memory): a held lock is its key and its fence counter.
func BenchmarkScaleHeld(b *testing.B) {
	srv := redistest.Start(b)
	d, err := redis.Open(context.Background(), redis.Config{URL: srv.URL()})
	if err != nil {
		b.Fatal(err)
	}
	c := srv.Client()
	defer c.Close()
	manager.BenchHeld(b, d, []int{1_000, 100_000, 1_000_000}, 2*time.Second, "used_memory", func() int64 {
		info, err := c.Info(context.Background(), "memory").Result()
		if err != nil {
			b.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		b.Fatal("no used_memory in INFO memory")
		return 0
	})
}
