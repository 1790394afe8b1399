package redis_test

import (
	"testing"
	"time"

	"github.com/zerotal/lock/drivers/redis/redistest"
)

// A release right after the grant is seen lapsed reports it not released:
// the hash a grant lives in expires with the grant's deadline, not in the
// millisecond after it, when the release of a hash's only field would
// still find it.
func TestRelease_OfAGrantSeenLapsedIsNotReleased(t *testing.T) {
	srv := redistest.Start(t)
	d := open(t, srv)
	const rounds = 200
	end := time.Now().Add(time.Minute)
	for i := 0; i < rounds && time.Now().Before(end); i++ {
		key, owner := newKey("lapse"), token()
		mustAcquire(t, d, key, owner, 2*time.Millisecond)
		for n := 0; ; n++ {
			held, err := d.Exists(t.Context(), key)
			if err != nil {
				t.Fatal(err)
			}
			if !held {
				break
			}
			if n > 10000 {
				t.Fatalf("round %d: a grant for 2ms still held after %d looks", i, n)
			}
		}
		if ok, err := d.Release(t.Context(), key, owner); err != nil || ok {
			t.Fatalf("round %d: Release of a grant Exists saw lapsed = %v, %v; want false", i, ok, err)
		}
	}
}
