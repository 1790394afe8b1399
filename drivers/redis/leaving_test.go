package redis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/drivers/redis"
	"github.com/zerotal/lock/drivers/redis/redistest"
)

// slowLeave is a go-redis hook that makes the release script of one owner
// slow (its two ARGV: the owner and 1), standing for a clean-up that Redis
// answers late.
type slowLeave struct {
	owner string
	by    time.Duration
}

func (s slowLeave) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (s slowLeave) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return next
}

func (s slowLeave) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if args := cmd.Args(); len(args) == 9 && args[7] == s.owner {
			t := time.NewTimer(s.by)
			select {
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
		}
		return next(ctx, cmd)
	}
}

// A wait that times out leaves its place in the queue in the background,
// so that it returns by its deadline. A release made right after by the
// same process comes after that clean-up, however late Redis answers it:
// it must not hand the key to the place of a waiter that is gone, which
// would keep it from everyone for a waiter's lease, and a new owner's try
// then gets the key at once.
func TestLeave_ReleaseAfterAnAbandonedWaitFreesTheKey(t *testing.T) {
	srv := redistest.Start(t)
	key, a, b, c := newKey("abandoned"), token(), token(), token()
	client := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	client.AddHook(slowLeave{owner: b, by: 300 * time.Millisecond})
	t.Cleanup(func() { _ = client.Close() })
	d, err := redis.New(client, noPoll)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })

	f1 := mustAcquire(t, d, key, a, time.Hour)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	_, err = driverstest.TakeWait(ctx, d, key, b, time.Hour, drivers.WaitOptions{})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the wait behind a holder: %v; want its deadline", err)
	}
	if ok, err := d.Release(t.Context(), key, a); !ok || err != nil {
		t.Fatalf("the holder's Release = %v, %v", ok, err)
	}
	f2, ok, held, err := driverstest.TakeHeld(t.Context(), d, key, c, time.Hour)
	if err != nil || !ok {
		t.Fatalf("the next owner's try after the release: acquired=%v, held by %+v, err %v; want the key at once", ok, held, err)
	}
	if f2 <= f1 {
		t.Fatalf("fence %d after %d", f2, f1)
	}
}
