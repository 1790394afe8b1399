package redis_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/drivers/redis"
	"github.com/zerotal/lock/drivers/redis/redistest"
)

// The driver's slot of a name is the one Redis Cluster computes, for the
// forms of name the driver makes (a key's own tag, a digest tag) and for
// names without a tag.
func TestSlot_IsTheClustersSlot(t *testing.T) {
	c := redistest.StartCluster(t, 3).Client(t)
	for _, key := range []string{"a", "orders:42", "brace{d}key", "{}", "", "ünïcode"} {
		lock, fence, _ := redis.KeyNames(key)
		for _, name := range []string{lock, fence, key, "plain" + key} {
			want, err := c.ClusterKeySlot(t.Context(), name).Result()
			if err != nil {
				t.Fatal(err)
			}
			if got := redis.Slot(name); int64(got) != want {
				t.Fatalf("Slot(%q) = %d, Redis says %d", name, got, want)
			}
		}
	}
}

// On Redis Cluster, keys that share a hash slot are taken by one script;
// keys that do not are refused as unsupported, with nothing taken.
func TestAcquireAll_OnTheClusterWhenTheKeysShareASlot(t *testing.T) {
	c := redistest.StartCluster(t, 3).Client(t)
	d, err := redis.New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	first, _, _ := redis.KeyNames("k0")
	var mate string
	for i := 1; mate == "" && i < 1_000_000; i++ {
		k := fmt.Sprint("k", i)
		if lock, _, _ := redis.KeyNames(k); redis.Slot(lock) == redis.Slot(first) {
			mate = k
		}
	}
	if mate == "" {
		t.Fatal("no key shares k0's slot in a million")
	}
	fences, ok, _, err := driverstest.TakeAll(t.Context(), d, []string{"k0", mate}, "me", time.Minute)
	if err != nil || !ok || len(fences) != 2 || fences[0] == 0 || fences[1] == 0 {
		t.Fatalf("AcquireAll of k0 and %s (one slot) = %v %v %v; want both granted", mate, fences, ok, err)
	}

	other := "k1"
	if lock, _, _ := redis.KeyNames(other); redis.Slot(lock) == redis.Slot(first) {
		other = "k2"
	}
	_, ok, _, err = driverstest.TakeAll(t.Context(), d, []string{"free", other}, "me", time.Minute)
	if ok || !errors.Is(err, drivers.ErrUnsupported) {
		t.Fatalf("AcquireAll across slots = %v %v; want ErrUnsupported", ok, err)
	}
	for _, k := range []string{"free", other} {
		if held, err := d.Exists(t.Context(), k); err != nil || held {
			t.Fatalf("%s after an unsupported AcquireAll: held %v, %v", k, held, err)
		}
	}
}
