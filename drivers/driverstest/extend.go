package driverstest

import (
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
)

func extender(t *testing.T, d drivers.Driver) drivers.Extender {
	t.Helper()
	x, ok := d.(drivers.Extender)
	if !ok {
		t.Skip("driver does not implement drivers.Extender; the Manager falls back to Acquire")
	}
	return x
}

func mustExtend(t *testing.T, x drivers.Extender, key, owner string, ttl time.Duration, want bool) {
	t.Helper()
	got, err := x.Extend(ctxFor(t), key, owner, ttl)
	if err != nil {
		t.Fatalf("Extend(%q, %q): %v", key, owner, err)
	}
	if got != want {
		t.Fatalf("Extend(%q, %q) = %v, want %v", key, owner, got, want)
	}
}

func testExtendOwnerGuarded(t *testing.T, s *suite) {
	a, b := s.driver(), s.driver()
	xa, xb := extender(t, a), extender(t, b)
	key, owner := s.key("extend"), token()
	mustAcquire(t, a, key, owner, longTTL)
	mustExtend(t, xb, key, token(), longTTL, false)
	mustExtend(t, xb, key, owner, longTTL, true)
	mustExtend(t, xa, s.key("free"), owner, longTTL, false)
	mustRelease(t, a, key, owner, true)
	mustExtend(t, xa, key, owner, longTTL, false)
	mustExist(t, b, key, false) // extend after release did not re-create it
}

func testExtendKeepsLockAlive(t *testing.T, s *suite) {
	a, b := s.driver(), s.driver()
	xa := extender(t, a)
	key, owner := s.key("alive"), token()
	// A TTL over three times ttlShort: each pass of the loop is two round
	// trips plus the pause, and under -race on a loaded machine one pass
	// has taken longer than 300ms, lapsing a lock the loop did extend.
	const ttl = time.Second
	start := time.Now()
	f1 := mustAcquire(t, a, key, owner, ttl)
	// Extend well inside the TTL for three TTLs: the lock must never lapse.
	for time.Since(start) < 3*ttl {
		mustExtend(t, xa, key, owner, ttl, true)
		mustNotAcquire(t, b, key, token(), longTTL)
		time.Sleep(ttl / 6) // pacing of the refresh loop under test
	}
	f2 := mustAcquire(t, a, key, owner, longTTL)
	if f1 != f2 {
		t.Fatalf("extension changed the fence: %d -> %d", f1, f2)
	}
	mustRelease(t, a, key, owner, true)
}

func testExtendNeverRegrants(t *testing.T, s *suite) {
	a, b := s.driver(), s.driver()
	xa := extender(t, a)
	key, owner := s.key("regrant"), token()
	mustAcquire(t, a, key, owner, ttlShort)
	eventually(t, 10*time.Second, "lock expires", func() bool {
		ok, err := b.Exists(ctxFor(t), key)
		if err != nil {
			t.Fatalf("Exists: %v", err)
		}
		return !ok
	})
	mustExtend(t, xa, key, owner, longTTL, false)
	mustExist(t, b, key, false)

	// And when someone else took the key meanwhile, the old owner's
	// extension must not touch the new holder's lock.
	other := token()
	mustAcquire(t, b, key, other, longTTL)
	mustExtend(t, xa, key, owner, longTTL, false)
	mustRelease(t, a, key, owner, false)
	mustExist(t, a, key, true)
	mustRelease(t, b, key, other, true)
}

// testSameOwnerAfterExpiryIsNewGrant checks what the Manager's refresh
// fallback (drivers without Extender) relies on to never re-grant silently:
// once a lock has expired, an Acquire by its old owner is a new grant with
// a new, larger fence, not a refresh that keeps the old one.
func testSameOwnerAfterExpiryIsNewGrant(t *testing.T, s *suite) {
	a, b := s.driver(), s.driver()
	key, owner := s.key("same-owner-expired"), token()
	f1 := mustAcquire(t, a, key, owner, ttlShort)
	eventually(t, 10*time.Second, "lock expires", func() bool {
		ok, err := b.Exists(ctxFor(t), key)
		if err != nil {
			t.Fatalf("Exists: %v", err)
		}
		return !ok
	})
	f2 := mustAcquire(t, a, key, owner, longTTL)
	if f1 != 0 && f2 <= f1 {
		t.Fatalf("Acquire by the same owner after expiry kept fence %d (got %d): an expired lock came back as a refresh", f1, f2)
	}
	mustNotAcquire(t, b, key, token(), longTTL)
	mustRelease(t, a, key, owner, true)
}

func testFencesStrictlyIncrease(t *testing.T, s *suite) {
	a, b := s.driver(), s.driver()
	key := s.key("fence")
	var fences []uint64
	handles := []drivers.Driver{a, b}
	for i := 0; i < 20; i++ {
		d := handles[i%2]
		owner := token()
		f := mustAcquire(t, d, key, owner, longTTL)
		fences = append(fences, f)
		switch i % 3 {
		case 0:
			mustRelease(t, d, key, owner, true)
		case 1:
			if err := handles[(i+1)%2].ForceRelease(ctxFor(t), key); err != nil {
				t.Fatalf("ForceRelease: %v", err)
			}
		case 2:
			mustRelease(t, handles[(i+1)%2], key, owner, true)
		}
	}
	if fences[0] == 0 {
		for _, f := range fences {
			if f != 0 {
				t.Fatalf("driver returned fence 0 and later %d: fencing must be all or nothing", f)
			}
		}
		t.Skip("driver has no fencing (fence 0)")
	}
	for i := 1; i < len(fences); i++ {
		if fences[i] <= fences[i-1] {
			t.Fatalf("fences do not strictly increase: %s", fmtFences(fences))
		}
	}
}
