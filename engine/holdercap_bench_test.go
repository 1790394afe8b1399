package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
)

// BenchmarkSharedKeyAtTheCap is the cost of one holder's cycle on a read
// lock (release, acquire again, extend: three operations) on a key of 2
// holders and on a key of the cap's, on the table the loop runs: an
// operation on a key must not scan its holders, so the two stay close.
//
//	go test -run '^$' -bench SharedKeyAtTheCap -benchtime 200000x ./engine/
func BenchmarkSharedKeyAtTheCap(b *testing.B) {
	for _, n := range []int{2, drivers.MaxHolders} {
		b.Run(fmt.Sprint("holders=", n), func(b *testing.B) {
			tb := newTable(0, 0)
			tb.advance(1)
			read := Claim{Kind: RWLock}
			for i := range n {
				// Spread deadlines, so the heap has an order to keep.
				if o := tb.take("k", fmt.Sprint("r", i), time.Hour+time.Duration(i), read, false); !o.ok {
					b.Fatalf("reader %d: %+v", i, o)
				}
			}
			owner := fmt.Sprint("r", n/2) // in the middle of the order
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				tb.release("k", owner, 0)
				tb.take("k", owner, time.Hour, read, false)
				tb.extend("k", owner, 2*time.Hour)
			}
		})
	}
}
