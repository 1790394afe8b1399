package lock

import (
	"strings"
	"testing"
)

func TestOpen_DriverNotInThisBuild(t *testing.T) {
	t.Parallel()
	missing := 0
	for name, open := range openers {
		if open != nil {
			continue
		}
		missing++
		cfg := Config{Driver: name, Redis: RedisConfig{URL: "redis://127.0.0.1:6379"}, Cluster: ClusterConfig{Addrs: []string{"127.0.0.1:7001"}}}
		m, err := Open(t.Context(), cfg)
		if m != nil || err == nil {
			t.Fatalf("Open(%q) = %v, %v", name, m, err)
		}
		want := `lock: driver "` + name + `" is not available in this build`
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%q) = %q, want %q", name, err, want)
		}
	}
	t.Logf("%d driver(s) not in this build", missing)
}

func TestDriverNames(t *testing.T) {
	t.Parallel()
	got := strings.Join(driverNames(), ",")
	if got != "cluster,memory,redis,sqlite" {
		t.Errorf("driverNames = %s", got)
	}
}

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
