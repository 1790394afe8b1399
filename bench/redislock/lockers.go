package redislock

import (
	"context"
	"time"

	"github.com/bsm/redislock"
	goredis "github.com/redis/go-redis/v9"

	"github.com/zerotal/lock/drivers"
	zredis "github.com/zerotal/lock/drivers/redis"
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

// zerotalLocker is our driver, used directly: Acquire for a key nobody else
// wants, AcquireWait (pub/sub wake-ups) to wait. It is opened from the URL,
// as an application would, so it has its own client with default options.
type zerotalLocker struct{ d *zredis.Driver }

func newZerotal(ctx context.Context, url string) (*zerotalLocker, error) {
	d, err := zredis.Open(ctx, zredis.Config{URL: url})
	if err != nil {
		return nil, err
	}
	return &zerotalLocker{d: d}, nil
}

func (l *zerotalLocker) acquire(ctx context.Context, key string, wait bool) (func(context.Context) error, error) {
	owner := token()
	if wait {
		if _, err := l.d.AcquireWait(ctx, key, owner, ttl, drivers.WaitOptions{}); err != nil {
			return nil, err
		}
	} else {
		_, ok, err := l.d.Acquire(ctx, key, owner, ttl)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, drivers.ErrNotAcquired
		}
	}
	return func(ctx context.Context) error {
		_, err := l.d.Release(ctx, key, owner)
		return err
	}, nil
}
