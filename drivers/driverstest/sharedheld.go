package driverstest

import (
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
)

// testSharedRefusalNamesTheHolderInTheWay: a refused shared acquire says
// who is in the way and for how long (drivers.Claim.InTheWay): for a
// semaphore's slot the grant that ends first, for a write behind readers
// the one that ends last.
func testSharedRefusalNamesTheHolderInTheWay(t *testing.T, s *suite) {
	d := s.driver()
	sh := sharer(t, d)
	soon, late := token()+":soon@a", token()+":late@b"
	for _, c := range []struct {
		name       string
		held, ask  drivers.Claim
		want       string
		minT, maxT time.Duration
	}{
		{"sem", semaphore(2), semaphore(2), "soon@a", 0, longTTL / 2},
		{"rw", readClaim, writeClaim, "late@b", longTTL / 2, longTTL},
	} {
		key := s.key(c.name)
		for owner, ttl := range map[string]time.Duration{soon: longTTL / 2, late: longTTL} {
			if _, ok, _, err := TakeShared(ctxFor(t), sh, key, owner, ttl, c.held); !ok || err != nil {
				t.Fatalf("%s: AcquireShared(%v) = %v, %v", c.name, c.held, ok, err)
			}
		}
		_, ok, held, err := TakeShared(ctxFor(t), sh, key, token(), longTTL, c.ask)
		if ok || err != nil || held.Holder != c.want || held.TTL <= c.minT || held.TTL > c.maxT {
			t.Errorf("%s: AcquireShared(%v) = %v, %+v, %v; want refused, held by %q for (%v, %v]", c.name, c.ask, ok, held, err, c.want, c.minT, c.maxT)
		}
	}
}
