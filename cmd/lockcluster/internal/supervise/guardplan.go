package supervise

import "time"

// guardPlan is the guard's rule, apart from the processes it acts on:
// given what run told it and the time, when the command's group gets
// SIGTERM and when SIGKILL. Times are CLOCK_MONOTONIC nanoseconds (see
// monoNow), the one clock run and its guard share.
//
// The guard acts on the lease's own end, as run last told it, not on why
// run went quiet: stopped (SIGSTOP of run or of its shell job, a
// debugger), wedged, or dead, the command is stopped as run itself stops
// it when refreshes fail: SIGTERM, then SIGKILL margin before the lease's
// end. It starts a quarter of the grace later than run would, so that a
// run that is merely slow has said it stops the group before the guard
// adds a SIGTERM of its own; the command then has three quarters of its
// grace. A healthy run refreshes every third of the TTL and tells the new
// end at once, long before (grace+margin is at most half the TTL).
type guardPlan struct {
	grace, margin time.Duration
	lease         int64 // the lease's end as run last told it; 0 unknown
	killAt        int64 // when SIGKILL goes out; 0 until the group is being stopped
}

// leaseEnds records a lease's end that run told. It no longer matters
// once the group is being stopped: a stop is not taken back.
func (p *guardPlan) leaseEnds(at int64) {
	if p.killAt == 0 {
		p.lease = at
	}
}

// runStops records that run stops the group itself, with SIGKILL at
// killAt: the guard sends no SIGTERM, and sends SIGKILL at killAt only if
// run has not said by then that it is done.
func (p *guardPlan) runStops(killAt int64) {
	if p.killAt == 0 || killAt < p.killAt {
		p.killAt = killAt
	}
}

// runEnded handles the end of run (the pipe's EOF) at now, and reports
// whether the group needs its SIGTERM: not when run had begun to stop it.
func (p *guardPlan) runEnded(now int64) (term bool) {
	if p.killAt != 0 {
		return false
	}
	p.start(now)
	return true
}

// tick says what is due at now: the SIGTERM of a stop the guard starts on
// its own (the lease is about to end and run has told no newer end), and
// the SIGKILL of a stop under way.
func (p *guardPlan) tick(now int64) (term, kill bool) {
	if p.killAt == 0 && p.lease != 0 && now >= p.termAt() {
		p.start(now)
		term = true
	}
	return term, p.killAt != 0 && now >= p.killAt
}

// next is when tick next has something to do (0: nothing until run tells
// more, or ends).
func (p *guardPlan) next() int64 {
	switch {
	case p.killAt != 0:
		return p.killAt
	case p.lease != 0:
		return p.termAt()
	}
	return 0
}

// stopping reports whether the group is being stopped.
func (p *guardPlan) stopping() bool { return p.killAt != 0 }

// termAt is when the guard stops the group of a lease that nobody extends.
func (p *guardPlan) termAt() int64 {
	return p.lease - int64(p.margin) - int64(p.grace) + int64(p.grace/4)
}

// start begins a stop at now: SIGKILL after the grace, and never later
// than margin before the lease's end.
func (p *guardPlan) start(now int64) {
	p.killAt = now + int64(p.grace)
	if p.lease != 0 {
		p.killAt = min(p.killAt, p.lease-int64(p.margin))
	}
}
