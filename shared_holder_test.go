package lock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zerotal/lock"
)

// A refused Try of a semaphore or a read/write lock says who is in the
// way and for how long, as a mutex's does, on every backend: the holder
// whose grant must end to let the caller in if nobody queued before it.
// For a semaphore's slot or a read that is the grant that ends first; for
// a write it is the one that ends last, since every holder must leave.
func TestNotAcquired_SharedRefusalSaysWhoAndHowLongOnEveryBackend(t *testing.T) {
	const short, long = 20 * time.Second, 40 * time.Second
	cases := []struct {
		name       string
		held       lock.Option // the claim of the two holders
		asked      lock.Option
		want       string // the holder named
		minT, maxT time.Duration
	}{
		{"semaphore full", lock.Semaphore(2), lock.Semaphore(2), "soon@a", short / 2, short},
		{"write behind readers", lock.Read(), lock.Write(), "late@b", short, long},
		{"read behind a writer", lock.Write(), lock.Read(), "soon@a", short / 2, short},
	}
	onRealBackends(t, func(t *testing.T, name string, m *lock.Manager) {
		for _, c := range cases {
			key := "shared-" + c.name
			hold(t, m, key, short, c.held, lock.WithOwner(lock.NewOwner("soon@a")))
			if c.name != "read behind a writer" {
				hold(t, m, key, long, c.held, lock.WithOwner(lock.NewOwner("late@b")))
			}
			err := m.Try(t.Context(), key, time.Second, noop, c.asked)
			na, ok := errors.AsType[*lock.NotAcquiredError](err)
			if !ok {
				t.Fatalf("%s: Try = %v; want a *NotAcquiredError", c.name, err)
			}
			if na.Holder != c.want || na.HolderTTL <= c.minT || na.HolderTTL > c.maxT {
				t.Errorf("%s: Try = %v: holder %q for %v; want %q for (%v, %v]", c.name, err, na.Holder, na.HolderTTL, c.want, c.minT, c.maxT)
			}
		}
	})
}
