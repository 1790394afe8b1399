package engine

import (
	"sort"
	"sync"
	"time"
)

// Clock is the engine's source of time in live mode.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// AfterFunc calls f in its own goroutine (or, for a fake clock, from
	// the goroutine that moves time) once d has elapsed, like
	// time.AfterFunc. The returned Timer's Stop and Reset behave like
	// those of time.Timer.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is the part of time.Timer the engine uses.
type Timer interface {
	// Stop prevents the timer from firing; it reports whether the call
	// stopped it (false when it had already fired or been stopped).
	Stop() bool
	// Reset makes the timer fire after d; it reports whether the timer
	// had been active.
	Reset(d time.Duration) bool
}

// SystemClock returns the clock of the operating system (time.Now and
// time.AfterFunc).
//
// The engine reads it through UnixNano: the wall time when the clock was
// made plus the monotonic time elapsed since, which costs one clock read
// instead of two and never goes backwards when the wall clock is stepped.
func SystemClock() Clock { return &systemClock{start: time.Now()} }

type systemClock struct {
	start time.Time // carries a monotonic reading
}

func (*systemClock) Now() time.Time { return time.Now() }

func (*systemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// UnixNano is the engine's time in unix nanoseconds (see SystemClock).
func (c *systemClock) UnixNano() int64 { return c.start.UnixNano() + int64(time.Since(c.start)) }

// unixNanoClock is implemented by clocks that can give the engine's time
// more cheaply than Now().UnixNano().
type unixNanoClock interface {
	UnixNano() int64
}

// FakeClock is a manual clock for tests: time moves only when Advance is
// called, and timers whose time has come fire from inside Advance, in
// order of their due time. It is safe for concurrent use.
type FakeClock struct {
	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers map[*fakeTimer]struct{}
}

// NewFakeClock returns a FakeClock whose time is start.
func NewFakeClock(start time.Time) *FakeClock {
	return &FakeClock{now: start, timers: make(map[*fakeTimer]struct{})}
}

// Now returns the clock's current time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc arranges for f to be called by the Advance that moves the
// clock to now+d or beyond. A d <= 0 calls f at once, before AfterFunc
// returns.
func (c *FakeClock) AfterFunc(d time.Duration, f func()) Timer {
	t := &fakeTimer{clock: c, f: f}
	t.Reset(d)
	return t
}

// Advance moves the clock forward by d (a negative d is ignored: the
// clock never goes back), then fires every timer that has fallen due,
// earliest first. Time is already at its new value when the callbacks
// run, so what they observe does not depend on scheduling.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(max(d, 0))
	for {
		t := c.nextDueLocked(c.now)
		if t == nil {
			break
		}
		delete(c.timers, t)
		f := t.f
		c.mu.Unlock()
		f()
		c.mu.Lock()
	}
	c.mu.Unlock()
}

// Timers reports how many timers are waiting to fire. Tests poll it to
// know that the engine has armed its expiry timer.
func (c *FakeClock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// NextTimer returns the due time of the earliest waiting timer.
func (c *FakeClock) NextTimer() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.nextDueLocked(time.Time{})
	if t == nil {
		return time.Time{}, false
	}
	return t.at, true
}

// nextDueLocked returns the earliest timer due at or before limit (any
// timer when limit is zero), ties broken by creation order.
func (c *FakeClock) nextDueLocked(limit time.Time) *fakeTimer {
	var all []*fakeTimer
	for t := range c.timers {
		if limit.IsZero() || !t.at.After(limit) {
			all = append(all, t)
		}
	}
	if len(all) == 0 {
		return nil
	}
	sort.Slice(all, func(i, j int) bool {
		if !all[i].at.Equal(all[j].at) {
			return all[i].at.Before(all[j].at)
		}
		return all[i].seq < all[j].seq
	})
	return all[0]
}

type fakeTimer struct {
	clock *FakeClock
	f     func()
	at    time.Time
	seq   uint64
}

// Stop removes the timer; it reports whether it was waiting.
func (t *fakeTimer) Stop() bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.timers[t]
	delete(c.timers, t)
	return ok
}

// Reset schedules the timer d after the clock's current time; a d <= 0
// fires it at once.
func (t *fakeTimer) Reset(d time.Duration) bool {
	c := t.clock
	c.mu.Lock()
	_, was := c.timers[t]
	if d <= 0 {
		delete(c.timers, t)
		c.mu.Unlock()
		t.f()
		return was
	}
	c.seq++
	t.seq = c.seq
	t.at = c.now.Add(d)
	c.timers[t] = struct{}{}
	c.mu.Unlock()
	return was
}
