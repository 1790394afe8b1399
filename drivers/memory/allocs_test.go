//go:build !race

// The race detector's sync.Pool drops a quarter of what it is given, so
// allocations are counted without it: go test -count=1 -run Allocat ./drivers/memory/

package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/memory"
)

// An acquire of one key, answered at once or after Wait, allocates
// nothing when the caller gives room for the fence (Request.Fences): the
// engine's grant stays on the driver's stack and the fence goes into the
// caller's array.
func TestDriver_OneKeyAcquireAllocatesNothing(t *testing.T) {
	d := newDriver(t, memory.Config{})
	ctx := context.Background()
	var room [1]uint64
	keys := []string{"k"}
	for _, wait := range []bool{false, true} {
		req := drivers.Request{Keys: keys, Owner: "o", TTL: time.Minute, Wait: wait, Fences: room[:0]}
		var failed error
		got := testing.AllocsPerRun(200, func() {
			g, err := d.Acquire(ctx, req)
			if err == nil && (!g.Acquired || g.Fence() == 0) {
				err = drivers.ErrNotAcquired
			}
			if err == nil {
				_, err = d.Release(ctx, "k", "o")
			}
			if err != nil {
				failed = err
			}
		})
		if failed != nil {
			t.Fatalf("wait=%v: %v", wait, failed)
		}
		if got != 0 {
			t.Errorf("wait=%v: an acquire and release of a free key made %.1f allocations, want 0", wait, got)
		}
	}
}
