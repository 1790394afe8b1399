package redis_test

import (
	"errors"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/drivers/redis"
	"github.com/zerotal/lock/drivers/redis/redistest"
)

// v010Acquire is v0.1.0's acquire script, as that release runs it on the
// same key names: a mutex is the string "{K}", the owner with the TTL.
var v010Acquire = goredis.NewScript(`
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {1, 0}
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, 0}
end
return {0, redis.call('PTTL', KEYS[1])}
`)

// Processes of v0.1.0 and of this release sharing one Redis exclude each
// other: a key this release holds is a hash, on which v0.1.0's acquire
// takes nothing, and a key v0.1.0 holds is busy here, its holder named.
func TestV010_ExcludesThisRelease(t *testing.T) {
	srv := redistest.Start(t)
	d, raw := open(t, srv), srv.Client()

	ours := newKey("ours")
	mustAcquire(t, d, ours, token(), time.Minute)
	lock, fence, _ := redis.KeyNames(ours)
	res, err := v010Acquire.Run(t.Context(), raw, []string{lock, fence}, "old", 60000).Slice()
	if err == nil && res[0] == int64(1) {
		t.Fatalf("v0.1.0's acquire of a key this release holds = %v; want refused", res)
	}

	theirs := newKey("theirs")
	lock, fence, _ = redis.KeyNames(theirs)
	if res, err := v010Acquire.Run(t.Context(), raw, []string{lock, fence}, "old-owner", 60000).Slice(); err != nil || res[0] != int64(1) {
		t.Fatalf("v0.1.0's acquire of a free key = %v, %v", res, err)
	}
	_, ok, err := driverstest.Take(t.Context(), d, theirs, token(), time.Minute)
	if ok || err != nil {
		t.Fatalf("Acquire of a key v0.1.0 holds = %v, %v; want refused", ok, err)
	}
	if held, err := d.Exists(t.Context(), theirs); !held || err != nil {
		t.Fatalf("Exists of a key v0.1.0 holds = %v, %v", held, err)
	}
	if ok, err := d.Release(t.Context(), theirs, "old-owner"); ok || err != nil {
		t.Fatalf("Release of v0.1.0's grant = %v, %v; want nothing released", ok, err)
	}
	if err := d.ForceRelease(t.Context(), theirs); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Get(t.Context(), lock).Result(); !errors.Is(err, goredis.Nil) {
		t.Fatalf("v0.1.0's key after ForceRelease: %v; want gone", err)
	}
}
