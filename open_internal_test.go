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

func TestNewOwnerIsRandomHexThenTheHolder(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, suffix := range []string{"", ":deploy@host-3"} {
		for range 100 {
			o := newOwner(suffix)
			token, rest := o[:min(len(o), 32)], o[min(len(o), 32):]
			if len(token) != 32 || strings.Trim(token, "0123456789abcdef") != "" || rest != suffix || seen[o] {
				t.Fatalf("owner %q: want 32 fresh hex digits, then %q", o, suffix)
			}
			seen[o] = true
		}
	}
}
