package memory_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/zerotal/lock/bench/manager"
	"github.com/zerotal/lock/drivers/memory"
)

// BenchmarkScaleHeld: the memory driver at 1 k, 100 k and 1 M held locks
// (make bench-scale). Memory is the process's live heap.
func BenchmarkScaleHeld(b *testing.B) {
	d := newDriver(b, memory.Config{MaxKeys: -1})
	manager.BenchHeld(b, d, []int{1_000, 100_000, 1_000_000}, 2*time.Second, "heap", func() int64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	})
}
