package driverstest

import (
	"testing"

	"github.com/zerotal/lock/drivers"
)

// testHolderReported: a refused AcquireHolder says who holds the key (the
// description in its owner, never the token) and how long it has left,
// as seen from another handle; an owner without a description names no
// one; a granted one reports nothing.
func testHolderReported(t *testing.T, s *suite) {
	a, b := s.driver(), s.driver()
	hr := b
	key := s.key("holder")
	tok := token()
	for _, tc := range []struct{ owner, want string }{
		{tok + ":deploy@host-3", "deploy@host-3"},
		{token(), ""},
		{"job-7", "job-7"},
	} {
		mustAcquire(t, a, key, tc.owner, longTTL)
		_, ok, held, err := TakeHeld(ctxFor(t), hr, key, token(), longTTL)
		if err != nil || ok {
			t.Fatalf("AcquireHolder of a held key: ok %v, %v", ok, err)
		}
		if held.Holder != tc.want || held.TTL <= 0 || held.TTL > longTTL {
			t.Fatalf("held by %q: reported %+v; want holder %q and time left in (0, %v]", tc.owner, held, tc.want, longTTL)
		}
		mustRelease(t, a, key, tc.owner, true)
	}
	_, ok, held, err := TakeHeld(ctxFor(t), hr, key, tok, longTTL)
	if err != nil || !ok || held != (drivers.HeldBy{}) {
		t.Fatalf("AcquireHolder of a free key: ok %v held %+v, %v; want a grant and nothing reported", ok, held, err)
	}
	mustRelease(t, a, key, tok, true)
}
