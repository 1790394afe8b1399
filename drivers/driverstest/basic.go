package driverstest

import (
	"testing"
	"time"
)

const longTTL = 30 * time.Second

func testAcquireHeldRelease(t *testing.T, s *suite) {
	a, b := s.driver(), s.driver()
	key, ownerA, ownerB := s.key("held"), token(), token()

	f1 := mustAcquire(t, a, key, ownerA, longTTL)
	mustNotAcquire(t, b, key, ownerB, longTTL)
	mustExist(t, b, key, true)
	mustRelease(t, a, key, ownerA, true)
	mustExist(t, b, key, false)
	f2 := mustAcquire(t, b, key, ownerB, longTTL)
	if f1 != 0 && f2 <= f1 {
		t.Fatalf("fence after re-grant = %d, want > %d", f2, f1)
	}
	mustRelease(t, b, key, ownerB, true)
	mustRelease(t, b, key, ownerB, false) // a second release is a no-op
}

func testArbitraryKeys(t *testing.T, s *suite) {
	a, b := s.driver(), s.driver()
	for _, name := range []string{
		"with spaces and/slashes:colons",
		"ünïcödé ключ 鍵",
		"quotes'\"and;semicolons--%_*?",
	} {
		key := s.key(name)
		owner := token()
		mustAcquire(t, a, key, owner, longTTL)
		mustNotAcquire(t, b, key, token(), longTTL)
		mustExist(t, b, key, true)
		mustRelease(t, a, key, owner, true)
		mustExist(t, b, key, false)
	}
}

func testOwnerGuardsRelease(t *testing.T, s *suite) {
	a, b := s.driver(), s.driver()
	key, owner := s.key("guard"), token()
	mustAcquire(t, a, key, owner, longTTL)
	mustRelease(t, b, key, token(), false)
	mustRelease(t, a, key, token(), false)
	mustExist(t, b, key, true)
	mustRelease(t, b, key, owner, true) // the owner token, not the handle, owns the lock
	mustExist(t, a, key, false)
}

func testSameOwnerRefreshKeepsFence(t *testing.T, s *suite) {
	a, b := s.driver(), s.driver()
	key, owner := s.key("refresh"), token()
	f1 := mustAcquire(t, a, key, owner, longTTL)
	f2 := mustAcquire(t, b, key, owner, longTTL)
	if f1 != f2 {
		t.Fatalf("refresh by the same owner changed the fence: %d -> %d", f1, f2)
	}
	mustRelease(t, a, key, owner, true)
}

func testForceRelease(t *testing.T, s *suite) {
	a, b := s.driver(), s.driver()
	key, owner := s.key("force"), token()
	f1 := mustAcquire(t, a, key, owner, longTTL)
	if err := b.ForceRelease(ctxFor(t), key); err != nil {
		t.Fatalf("ForceRelease: %v", err)
	}
	mustExist(t, a, key, false)
	mustRelease(t, a, key, owner, false) // the late holder's release is a no-op
	if err := b.ForceRelease(ctxFor(t), key); err != nil {
		t.Fatalf("ForceRelease of a free key: %v", err)
	}
	other := token()
	f2 := mustAcquire(t, b, key, other, longTTL)
	if f1 != 0 && f2 <= f1 {
		t.Fatalf("fence after force release = %d, want > %d", f2, f1)
	}
	mustRelease(t, a, key, owner, false)
	mustExist(t, a, key, true)
	mustRelease(t, b, key, other, true)
}

func testExistsOnFreeKey(t *testing.T, s *suite) {
	a := s.driver()
	mustExist(t, a, s.key("never"), false)
}

// ttlShort is long enough for a round trip to any backend, short enough to
// keep the suite quick.
const ttlShort = 300 * time.Millisecond

func testTTLExpiry(t *testing.T, s *suite) {
	a, b := s.driver(), s.driver()
	key, owner := s.key("ttl"), token()
	sent := time.Now()
	f1 := mustAcquire(t, a, key, owner, ttlShort)
	mustExist(t, b, key, true)
	mustNotAcquire(t, b, key, token(), longTTL)
	eventually(t, 10*time.Second, "lock expires after its TTL", func() bool {
		ok, err := b.Exists(ctxFor(t), key)
		if err != nil {
			t.Fatalf("Exists: %v", err)
		}
		return !ok
	})
	if elapsed := time.Since(sent); elapsed < ttlShort {
		t.Fatalf("lock expired after %v, before its TTL of %v", elapsed, ttlShort)
	}
	other := token()
	f2 := mustAcquire(t, b, key, other, longTTL)
	if f1 != 0 && f2 <= f1 {
		t.Fatalf("fence after expiry = %d, want > %d", f2, f1)
	}
	mustRelease(t, a, key, owner, false) // the expired holder cannot release the new one
	mustExist(t, a, key, true)
	mustRelease(t, b, key, other, true)
}
