//go:build unix

package supervise

import (
	"time"

	"golang.org/x/sys/unix"
)

// monoNow reads CLOCK_MONOTONIC, in nanoseconds. Unlike the monotonic
// reading of time.Now, which counts from the process's start, it is one
// clock for every process of the system, so run can tell its guard when
// the lease ends as a point in time that the guard reads the same: no
// delay of the pipe between them moves it, and no change of the wall
// clock either.
func monoNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(clockMonotonic, &ts); err != nil {
		panic("supervise: CLOCK_MONOTONIC: " + err.Error()) // exists on every Unix Go runs on
	}
	return ts.Nano()
}

// monoAt is t on CLOCK_MONOTONIC. The clock is read before time.Until,
// so that the time between the two reads makes the result early, never
// late.
func monoAt(t time.Time) int64 {
	now := monoNow()
	return now + int64(time.Until(t))
}
