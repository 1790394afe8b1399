package redis_test

import (
	"testing"

	"github.com/zerotal/lock/drivers/redis"
	"github.com/zerotal/lock/drivers/redis/redistest"
)

// trickyKeys could break a hash tag: braces anywhere, an empty tag, a
// closing brace first, and keys that look like another key's names.
var trickyKeys = []string{
	"plain", "zerotal_lock:invoice:123", "a{b}c", "{b}", "{}", "}{", "}x", "x{", "{",
	"}", "a}:fence", "a}", "plain:fence", "plain}:fence", "{plain}", "#0123",
	"ünïcödé ключ 鍵", "with space/and:colons",
}

// TestKeyNames_OneSlotPerLock asks a Redis Cluster node which slot each name
// hashes to: a lock's key and fence must share one, or the scripts that
// touch both are refused with CROSSSLOT.
func TestKeyNames_OneSlotPerLock(t *testing.T) {
	node := redistest.StartCluster(t, 1).Nodes[0].Client()
	for _, k := range trickyKeys {
		lock, fence, _ := redis.KeyNames(k)
		ls, err := node.ClusterKeySlot(t.Context(), lock).Result()
		if err != nil {
			t.Fatal(err)
		}
		fs, err := node.ClusterKeySlot(t.Context(), fence).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ls != fs {
			t.Errorf("key %q: lock %q in slot %d, fence %q in slot %d", k, lock, ls, fence, fs)
		}
	}
}

func TestKeyNames_NeverShared(t *testing.T) {
	owner := map[string]string{}
	for _, k := range trickyKeys {
		lock, fence, channel := redis.KeyNames(k)
		for _, name := range []string{lock, fence} {
			if other, taken := owner[name]; taken {
				t.Fatalf("name %q used by keys %q and %q", name, other, k)
			}
			owner[name] = k
		}
		if channel == lock || channel == fence {
			t.Fatalf("key %q: channel named like a key", k)
		}
	}
}
