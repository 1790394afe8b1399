//go:build !race

// The race detector's sync.Pool drops a quarter of what it is given, so
// allocations are counted without it: go test -count=1 -run Allocat ./engine/

package engine

import (
	"context"
	"testing"
	"time"
)

// An acquire of one key allocates nothing when the caller gives room for
// its grant, with or without Wait: the loop writes the grant into the
// pooled request's own room and Acquire copies it into the caller's.
func TestEngine_OneKeyAcquireAllocatesNothing(t *testing.T) {
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	keys := []string{"k"}
	for _, wait := range []bool{false, true} {
		req := AcquireRequest{Keys: keys, Owner: "o", TTL: time.Minute, Wait: wait}
		var failed bool
		got := testing.AllocsPerRun(200, func() {
			var into [1]Grant
			grants, _, err := e.Acquire(ctx, req, into[:0])
			if err != nil || len(grants) != 1 || grants[0].Fence == 0 {
				failed = true
			}
			if ok, err := e.Release(ctx, "k", "o"); !ok || err != nil {
				failed = true
			}
		})
		if failed {
			t.Fatalf("wait=%v: the cycle failed", wait)
		}
		if got != 0 {
			t.Errorf("wait=%v: an acquire and release of a free key made %.1f allocations, want 0", wait, got)
		}
	}
}
