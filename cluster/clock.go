package cluster

import "time"

// Clock is the time source of a node (see Config.Clock). Implementations
// must be safe for concurrent use, and Since must never run backwards.
type Clock interface {
	// Now is the wall-clock time.
	Now() time.Time
	// Since is the monotonic time elapsed since t, a time.Now reading.
	Since(t time.Time) time.Duration
}

// hostClock is the host's clock: Config.Clock when none is given.
type hostClock struct{}

func (hostClock) Now() time.Time                  { return time.Now() }
func (hostClock) Since(t time.Time) time.Duration { return time.Since(t) }

// clock is the configured Clock, or the host's.
func (c Config) clock() Clock {
	if c.Clock != nil {
		return c.Clock
	}
	return hostClock{}
}

// dialAddr is the address dialled to reach addr (see Config.DialAddr).
func (c Config) dialAddr(addr string) string {
	if c.DialAddr != nil {
		return c.DialAddr(addr)
	}
	return addr
}
