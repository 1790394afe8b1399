//go:build unix

package cpu

import (
	"fmt"
	"syscall"
	"time"
)

// Self returns the CPU time this process has used so far, user and
// system, all threads, from getrusage(2): microsecond resolution, where
// /proc/self/stat counts in 10ms ticks.
func Self() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("cpu: getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
