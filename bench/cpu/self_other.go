//go:build !unix

package cpu

import "time"

// Self would return this process's CPU time; this platform has no
// getrusage.
func Self() (time.Duration, error) { return 0, ErrUnsupported }
