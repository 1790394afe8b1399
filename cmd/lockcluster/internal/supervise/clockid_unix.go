//go:build unix && !netbsd

package supervise

import "golang.org/x/sys/unix"

const clockMonotonic = unix.CLOCK_MONOTONIC
