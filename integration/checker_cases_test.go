package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
)

// ms is a history time in milliseconds.
func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// hop builds a hand-made history operation.
func hop(kind opKind, owner string, start, end int, res outcome, fence uint64, ttlMS int) op {
	return op{key: "k", owner: owner, kind: kind, start: ms(start), end: ms(end),
		result: res, fence: fence, ttl: ms(ttlMS)}
}

var (
	sem2  = drivers.Claim{Kind: drivers.Semaphore, Limit: 2}
	read  = drivers.Claim{Kind: drivers.RWLock}
	write = drivers.Claim{Kind: drivers.RWLock, Write: true}
)

// sop is o of a shared key, held as c says.
func sop(o op, c drivers.Claim) op {
	o.claim = c
	return o
}

func TestChecker_HandMadeHistories(t *testing.T) {
	tests := []struct {
		name string
		ops  []op
		want string // rule expected to be broken; "" for a correct history
	}{
		{"sequential grants", []op{
			hop(opAcquire, "a", 0, 10, resOK, 5, 1000),
			hop(opRelease, "a", 20, 30, resOK, 0, 0),
			hop(opAcquire, "b", 40, 50, resOK, 9, 1000),
		}, ""},
		{"expiry then new holder", []op{
			hop(opAcquire, "a", 0, 10, resOK, 5, 100),
			hop(opAcquire, "b", 50, 120, resOK, 9, 1000),
		}, ""},
		{"extend keeps the belief alive", []op{
			hop(opAcquire, "a", 0, 10, resOK, 5, 100),
			hop(opExtend, "a", 60, 70, resOK, 0, 100),
			hop(opAcquire, "b", 100, 130, resOK, 9, 1000),
		}, "two-holders"},
		{"granted while the holder believed", []op{
			hop(opAcquire, "a", 0, 10, resOK, 5, 1000),
			hop(opAcquire, "b", 40, 50, resOK, 9, 1000),
		}, "two-holders"},
		{"release sent ends the belief, whatever its answer", []op{
			hop(opAcquire, "a", 0, 10, resOK, 5, 1000),
			hop(opRelease, "a", 20, 900, resUnknown, 0, 0),
			hop(opAcquire, "b", 40, 50, resOK, 9, 1000),
		}, ""},
		{"unknown acquire creates no belief", []op{
			hop(opAcquire, "a", 0, 10, resUnknown, 0, 1000),
			hop(opAcquire, "b", 40, 50, resOK, 9, 1000),
		}, ""},
		// Recorded by TestNemesis_RetriedWaits before the leader tracked
		// live requests: b's first wait (via a follower) was abandoned, its
		// retry through another node answered 200, and the abandoned
		// request's clean-up released the key, which went to c.
		{"a retried wait answered 200, then the key went to another", []op{
			hop(opAcquire, "a", 0, 10, resOK, 30, 2000),
			hop(opWait, "b", 413, 465, resUnknown, 0, 2000),
			hop(opRelease, "a", 430, 445, resOK, 0, 0),
			hop(opWait, "c", 423, 480, resOK, 34, 2000),
			hop(opWait, "b", 440, 474, resOK, 32, 2000),
			hop(opRelease, "b", 624, 637, resFail, 0, 0),
			hop(opRelease, "c", 630, 641, resOK, 0, 0),
		}, "two-holders"},
		{"a retried wait that got the key, the abandoned one's answer lost", []op{
			hop(opAcquire, "a", 0, 10, resOK, 30, 2000),
			hop(opWait, "b", 413, 465, resUnknown, 0, 2000),
			hop(opRelease, "a", 430, 445, resOK, 0, 0),
			hop(opWait, "b", 440, 474, resOK, 32, 2000),
			hop(opRelease, "b", 624, 637, resOK, 0, 0),
			hop(opWait, "c", 423, 640, resOK, 34, 2000),
		}, ""},
		{"fence goes backwards", []op{
			hop(opAcquire, "a", 0, 10, resOK, 9, 10),
			hop(opRelease, "a", 15, 18, resOK, 0, 0),
			hop(opAcquire, "b", 20, 30, resOK, 5, 10),
		}, "fence-order"},
		{"overlapping grants may come in either order", []op{
			hop(opAcquire, "a", 0, 100, resOK, 9, 10),
			hop(opAcquire, "b", 20, 30, resOK, 5, 10),
		}, ""},
		{"one fence for two owners", []op{
			hop(opAcquire, "a", 0, 10, resOK, 7, 10),
			hop(opAcquire, "b", 50, 60, resOK, 7, 10),
		}, "fence-order"},
		{"two slots of a semaphore of 2", []op{
			sop(hop(opAcquire, "a", 0, 10, resOK, 5, 1000), sem2),
			sop(hop(opAcquire, "b", 20, 30, resOK, 6, 1000), sem2),
		}, ""},
		{"three holders of a semaphore of 2", []op{
			sop(hop(opAcquire, "a", 0, 10, resOK, 5, 1000), sem2),
			sop(hop(opAcquire, "b", 20, 30, resOK, 6, 1000), sem2),
			sop(hop(opWait, "c", 25, 40, resOK, 7, 1000), sem2),
		}, "too-many-holders"},
		{"a slot freed by a release", []op{
			sop(hop(opAcquire, "a", 0, 10, resOK, 5, 1000), sem2),
			sop(hop(opAcquire, "b", 20, 30, resOK, 6, 1000), sem2),
			hop(opRelease, "a", 32, 35, resOK, 0, 0),
			sop(hop(opWait, "c", 25, 40, resOK, 7, 1000), sem2),
		}, ""},
		{"readers share", []op{
			sop(hop(opAcquire, "a", 0, 10, resOK, 5, 1000), read),
			sop(hop(opAcquire, "b", 20, 30, resOK, 6, 1000), read),
		}, ""},
		{"a writer beside a reader", []op{
			sop(hop(opAcquire, "a", 0, 10, resOK, 5, 1000), read),
			sop(hop(opWait, "b", 20, 30, resOK, 6, 1000), write),
		}, "too-many-holders"},
		{"a reader beside a writer", []op{
			sop(hop(opAcquire, "a", 0, 10, resOK, 5, 1000), write),
			sop(hop(opAcquire, "b", 20, 30, resOK, 6, 1000), read),
		}, "too-many-holders"},
		{"a writer after the readers left", []op{
			sop(hop(opAcquire, "a", 0, 10, resOK, 5, 1000), read),
			sop(hop(opAcquire, "b", 5, 12, resOK, 6, 1000), read),
			hop(opRelease, "a", 15, 18, resOK, 0, 0),
			hop(opRelease, "b", 16, 19, resUnknown, 0, 0),
			sop(hop(opWait, "c", 8, 30, resOK, 7, 1000), write),
		}, ""},
		{"refresh by acquire keeps the fence", []op{
			hop(opAcquire, "a", 0, 10, resOK, 7, 100),
			hop(opAcquire, "a", 50, 60, resOK, 7, 100),
			hop(opRelease, "a", 70, 80, resOK, 0, 0),
			hop(opAcquire, "b", 90, 100, resOK, 8, 100),
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs := checkHistory(tt.ops)
			if tt.want == "" {
				if len(vs) > 0 {
					t.Fatalf("correct history flagged:\n%s", formatViolations(vs))
				}
				return
			}
			if len(vs) == 0 {
				t.Fatalf("broken history (%s) passed", tt.want)
			}
			if vs[0].rule != tt.want {
				t.Fatalf("rule %s flagged, want %s:\n%s", vs[0].rule, tt.want, formatViolations(vs))
			}
			if !strings.Contains(vs[0].String(), "owner=") {
				t.Errorf("violation does not print the history: %s", vs[0])
			}
		})
	}
}

func TestChecker_Durable(t *testing.T) {
	hist := []op{
		hop(opAcquire, "a", 0, 10, resOK, 5, 60000),
		hop(opAcquire, "b", 0, 10, resOK, 6, 60000), // on another key, below
		hop(opAcquire, "c", 20, 30, resOK, 7, 60000),
		hop(opRelease, "c", 40, 50, resOK, 0, 0),
	}
	hist[1].key = "k2"
	hist[2].key, hist[3].key = "k3", "k3"
	get := func(key string, start int, res outcome, holder string, fence uint64) op {
		return op{key: key, kind: opGet, start: ms(start), end: ms(start + 5), result: res, holder: holder, fence: fence}
	}
	good := []op{get("k", 1000, resOK, "a", 5), get("k2", 1000, resOK, "b", 6), get("k3", 1000, resFail, "", 0)}
	if vs, checked := checkDurable(hist, good); len(vs) > 0 || checked != 2 {
		t.Fatalf("correct restart: %d grants checked (want 2), flagged:\n%s", checked, formatViolations(vs))
	}
	for name, reads := range map[string][]op{
		"lost":          {get("k", 1000, resFail, "", 0)},
		"other owner":   {get("k2", 1000, resOK, "z", 6)},
		"other fence":   {get("k", 1000, resOK, "a", 55)},
		"second lookup": {get("k3", 1000, resFail, "", 0), get("k2", 2000, resFail, "", 0)},
	} {
		vs, _ := checkDurable(hist, reads)
		if len(vs) != 1 || vs[0].rule != "lost" {
			t.Errorf("%s: got %d violations, want one lost:\n%s", name, len(vs), formatViolations(vs))
		}
	}
	// A read after the TTL ran out may find the key free.
	if vs, _ := checkDurable(hist, []op{get("k", 70000, resFail, "", 0)}); len(vs) > 0 {
		t.Errorf("expired grant flagged:\n%s", formatViolations(vs))
	}
}
