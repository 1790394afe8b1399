package term

import "time"

// Clock stamps Now into the commands this leader proposes. It is
// the replicated FSM time t0 read after the takeover barrier, plus the
// local monotonic time elapsed since then minus a grace period: during
// the grace (election timeout + leader lease) time stands still, so a
// holder's remaining TTL can only lengthen across a leader change. Wall
// clocks of different nodes are never compared.
type Clock struct {
	t0    int64
	m0    time.Time // carries Go's monotonic reading
	grace time.Duration
	since func(time.Time) time.Duration // the node's monotonic clock
}

// Now is the time to stamp a command with, unix nanoseconds of FSM time.
func (c *Clock) Now() int64 {
	el := c.since(c.m0) - c.grace
	if el < 0 {
		el = 0
	}
	return c.t0 + int64(el)
}

// UntilRunning is how long time still stands still.
func (c *Clock) UntilRunning() time.Duration {
	d := c.grace - c.since(c.m0)
	if d < 0 {
		return 0
	}
	return d
}

// NewClock starts a term's clock at t0, the FSM time read after the
// takeover barrier; time stands still for grace, then runs with since,
// the node's monotonic clock (time.Since unless a test skews it).
func NewClock(t0 int64, grace time.Duration, since func(time.Time) time.Duration) *Clock {
	return &Clock{t0: t0, m0: time.Now(), grace: grace, since: since}
}

// Origin is t0, the FSM time the term started from.
func (c *Clock) Origin() int64 { return c.t0 }

// Grace is how long time stood still at the start of the term.
func (c *Clock) Grace() time.Duration { return c.grace }
