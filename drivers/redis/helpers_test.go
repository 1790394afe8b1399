package redis_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/drivers/redis"
	"github.com/zerotal/lock/drivers/redis/redistest"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// open opens a driver on srv and closes it when the test ends.
func open(t *testing.T, srv *redistest.Server, opts ...redis.Option) *redis.Driver {
	t.Helper()
	cfg := redis.Config{URL: srv.URL()}
	for _, o := range opts {
		o(&cfg)
	}
	d, err := redis.Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

func token() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func newKey(name string) string { return "redistest:" + token()[:8] + ":" + name }

func mustAcquire(t *testing.T, d drivers.Driver, key, owner string, ttl time.Duration) uint64 {
	t.Helper()
	fence, ok, err := driverstest.Take(t.Context(), d, key, owner, ttl)
	if err != nil || !ok {
		t.Fatalf("Acquire(%q) = %v, %v; want acquired", key, ok, err)
	}
	return fence
}

type waitResult struct {
	fence uint64
	err   error
	at    time.Time
}

// startWait runs AcquireWait in a goroutine and waits until the driver has
// queued it and its subscription is confirmed, so that what the test does
// next happens while it waits.
func startWait(t *testing.T, ctx context.Context, d *redis.Driver, key, owner string, ttl time.Duration) <-chan waitResult {
	t.Helper()
	before := redis.Waiters(d, key)
	done := make(chan waitResult, 1)
	go func() {
		f, err := driverstest.TakeWait(ctx, d, key, owner, ttl, drivers.WaitOptions{})
		done <- waitResult{fence: f, err: err, at: time.Now()}
	}()
	poll.Until(t, 10*time.Second, "waiter queued and subscribed", func() bool {
		return redis.Waiters(d, key) > before && redis.Subscribed(d, key)
	})
	return done
}

// receive returns the wait's result, failing the test after within.
func receive(t *testing.T, done <-chan waitResult, within time.Duration) waitResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(within):
		t.Fatalf("AcquireWait did not return within %v", within)
		return waitResult{}
	}
}

func splitLines(s string) []string { return strings.Split(strings.TrimSpace(s), "\n") }

// containsField reports whether a CLIENT LIST line has the field f
// (name=value) among its space-separated fields, or a field starting with f
// when f ends in "=".
func containsField(line, f string) bool {
	for _, field := range strings.Fields(line) {
		if field == f || (strings.HasSuffix(f, "=") && strings.HasPrefix(field, f)) {
			return true
		}
	}
	return false
}
