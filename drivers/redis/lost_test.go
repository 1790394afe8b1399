package redis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/redis/redistest"
)

// TestServerKilled_RefreshEndsInLost holds a refreshed lock through the
// Manager and kills Redis: the refresh cannot reach it until the TTL runs
// out, and the callback's context is cancelled with the lost-lock error
// (which also says that Redis was unavailable) instead of silence.
func TestServerKilled_RefreshEndsInLost(t *testing.T) {
	srv := redistest.Start(t)
	m := lock.New(open(t, srv))
	const ttl = time.Second

	var cause error
	start := time.Now()
	err := m.Try(t.Context(), newKey("lost"), ttl, func(ctx context.Context, l *lock.Lock) error {
		srv.Kill()
		select {
		case <-ctx.Done():
			cause = context.Cause(ctx)
		case <-time.After(20 * time.Second):
			t.Error("callback context not cancelled within 20s of Redis going away")
		}
		return nil
	}, lock.WithRefresh())

	if !errors.Is(err, lock.ErrLost) {
		t.Fatalf("Try = %v, want ErrLost", err)
	}
	if !errors.Is(err, drivers.ErrUnavailable) {
		t.Fatalf("Try = %v, want it to say that Redis was unavailable", err)
	}
	if !errors.Is(cause, lock.ErrLost) {
		t.Fatalf("callback context cause = %v, want ErrLost", cause)
	}
	t.Logf("lost after %v with a TTL of %v: %v", time.Since(start), ttl, err)
}
