package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/memory"
)

// BenchmarkDriverCycle: one caller, one free key, Acquire and Release on
// the driver alone, with allocations, without and with Wait; the request
// made once with room for its fence, as the Manager's handle makes it.
func BenchmarkDriverCycle(b *testing.B) {
	d := newDriver(b, memory.Config{})
	ctx := context.Background()
	for _, wait := range []bool{false, true} {
		name := "acquire"
		if wait {
			name = "wait"
		}
		b.Run(name, func(b *testing.B) {
			req := drivers.Request{Keys: []string{"k"}, Owner: "o", TTL: time.Minute, Wait: wait, Fences: make([]uint64, 0, 1)}
			b.ReportAllocs()
			for b.Loop() {
				if g, err := d.Acquire(ctx, req); !g.Acquired || err != nil {
					b.Fatal(g, err)
				}
				if _, err := d.Release(ctx, "k", "o"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
