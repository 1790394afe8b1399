package api

import (
	"math"
	"time"
)

// Millis converts d to whole milliseconds for the wire, rounding up so
// that a positive duration never becomes 0 (which would mean "none").
// A negative d gives 0.
func Millis(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d-1)/time.Millisecond) + 1
}

// Duration converts milliseconds from the wire to a time.Duration,
// saturating instead of overflowing on values beyond about 292 years.
func Duration(ms int64) time.Duration {
	switch {
	case ms > math.MaxInt64/int64(time.Millisecond):
		return math.MaxInt64
	case ms < math.MinInt64/int64(time.Millisecond):
		return math.MinInt64
	}
	return time.Duration(ms) * time.Millisecond
}
