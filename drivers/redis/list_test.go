package redis_test

import (
	"slices"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/drivers/redis"
	"github.com/zerotal/lock/drivers/redis/redistest"
)

// ListHeld finds every key under a prefix, whatever it contains (braces,
// which take the digest form of name, and the characters SCAN's pattern
// gives a meaning, in the keys and in the prefix), and nothing of the
// other data in the database: not a fence counter, not a name that only
// looks like a lock's, not a key outside the prefix.
func TestListHeld_FindsEveryKeyAndNothingElse(t *testing.T) {
	srv := redistest.Start(t)
	d, err := redis.Open(t.Context(), redis.Config{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, prefix := range []string{"app:", `g*l?b[x]\`} {
		var want []string
		for _, k := range trickyKeys {
			want = append(want, prefix+k)
		}
		slices.Sort(want)
		for _, k := range append(slices.Clone(want), "other:"+prefix) {
			if _, ok, err := driverstest.Take(t.Context(), d, k, "o", time.Minute); !ok || err != nil {
				t.Fatalf("Acquire(%q) = %v, %v", k, ok, err)
			}
		}
		raw := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
		defer raw.Close()
		for _, name := range []string{"{" + prefix + "fake", "{" + prefix + "x}y}", "{" + prefix + "list}"} {
			if err := raw.RPush(t.Context(), name, "not a lock").Err(); err != nil {
				t.Fatal(err)
			}
		}
		locks, truncated, err := d.ListHeld(t.Context(), prefix, 1000)
		if err != nil {
			t.Fatalf("ListHeld(%q): %v", prefix, err)
		}
		var got []string
		for _, l := range locks {
			got = append(got, l.Key)
		}
		if !slices.Equal(got, want) || truncated {
			t.Errorf("ListHeld(%q) = %q, truncated %v;\nwant %q", prefix, got, truncated, want)
		}
	}
}
