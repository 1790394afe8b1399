package supervise

// clockMonotonic is CLOCK_MONOTONIC of NetBSD's <sys/time.h>, which
// golang.org/x/sys/unix does not name there.
const clockMonotonic = 3
