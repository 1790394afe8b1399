package redislock

import (
	"context"
	"time"

	"github.com/bsm/redislock"
	goredis "github.com/redis/go-redis/v9"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers"
)

// ttl of every lock in the benchmark: long enough never to expire.
const ttl = 10 * time.Second

// bsmLocker is github.com/bsm/redislock, waiting by its linear back-off of
// 1 ms (its documented way to wait for a lock).
type bsmLocker struct{ c *redislock.Client }

func newBSM(client *goredis.Client) *bsmLocker { return &bsmLocker{c: redislock.New(client)} }

func (l *bsmLocker) acquire(ctx context.Context, key string, wait bool) (func(context.Context) error, error) {
	opt := &redislock.Options{}
	if wait {
		opt.RetryStrategy = redislock.LinearBackoff(time.Millisecond)
	}
	lk, err := l.c.Obtain(ctx, key, ttl, opt)
	if err != nil {
		return nil, err
	}
	return lk.Release, nil
}

// zerotalLocker is our public API, as an application uses it: a handle per
// cycle from Manager.Make, then Acquire for a key nobody else wants, or
// Block (pub/sub wake-ups, FIFO) to wait for it, and Release.
type zerotalLocker struct{ m *lock.Manager }

func (l *zerotalLocker) acquire(ctx context.Context, key string, wait bool) (func(context.Context) error, error) {
	lk := l.m.Make(key, ttl)
	if wait {
		if err := lk.Block(ctx, 0); err != nil {
			return nil, err
		}
		return lk.Release, nil
	}
	ok, err := lk.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, drivers.ErrNotAcquired
	}
	return lk.Release, nil
}
