package lock

import (
	"strings"
	"testing"
)

func TestJitterStaysWithinTenPercent(t *testing.T) {
	t.Parallel()
	for range 1000 {
		if d := jitter(100); d < 100 || d >= 110 {
			t.Fatalf("jitter(100) = %d", d)
		}
	}
	if jitter(5) != 5 {
		t.Error("tiny delays must not be jittered")
	}
}

func TestNewOwnerIsRandomHex(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 100 {
		o := newOwner()
		if len(o) != 32 || strings.Trim(o, "0123456789abcdef") != "" || seen[o] {
			t.Fatalf("owner %q: want 32 fresh hex digits", o)
		}
		seen[o] = true
	}
}
