package engine

import (
	"testing"
	"time"
)

func TestFakeClock_TimersFireInOrderOnAdvance(t *testing.T) {
	c := NewFakeClock(epoch)
	var fired []string
	at := map[string]time.Time{}
	add := func(name string, d time.Duration) Timer {
		return c.AfterFunc(d, func() {
			fired = append(fired, name)
			at[name] = c.Now()
		})
	}
	add("b", 2*time.Second)
	add("a", time.Second)
	stopped := add("x", 1500*time.Millisecond)
	if !stopped.Stop() {
		t.Fatal("Stop of a waiting timer returned false")
	}
	if stopped.Stop() {
		t.Fatal("second Stop returned true")
	}
	if n := c.Timers(); n != 2 {
		t.Fatalf("Timers = %d", n)
	}
	if next, ok := c.NextTimer(); !ok || !next.Equal(epoch.Add(time.Second)) {
		t.Fatalf("NextTimer = %v %v", next, ok)
	}
	c.Advance(999 * time.Millisecond)
	if len(fired) != 0 {
		t.Fatalf("fired early: %v", fired)
	}
	c.Advance(5 * time.Second)
	if len(fired) != 2 || fired[0] != "a" || fired[1] != "b" {
		t.Fatalf("fired = %v", fired)
	}
	if want := epoch.Add(5999 * time.Millisecond); !at["a"].Equal(want) || !c.Now().Equal(want) {
		t.Fatalf("callbacks saw %v, clock %v; want %v", at["a"], c.Now(), want)
	}
	if c.Timers() != 0 {
		t.Fatal("fired timers still counted")
	}
}

func TestFakeClock_ResetAndImmediateFire(t *testing.T) {
	c := NewFakeClock(epoch)
	n := 0
	tm := c.AfterFunc(time.Second, func() { n++ })
	if !tm.Reset(3 * time.Second) {
		t.Fatal("Reset of a waiting timer returned false")
	}
	c.Advance(2 * time.Second)
	if n != 0 {
		t.Fatal("fired at its old time")
	}
	c.Advance(time.Second)
	if n != 1 {
		t.Fatalf("fired %d times", n)
	}
	if tm.Reset(0) {
		t.Fatal("Reset of a fired timer returned true")
	}
	if n != 2 {
		t.Fatal("Reset(0) did not fire at once")
	}
	c.AfterFunc(-time.Second, func() { n++ })
	if n != 3 {
		t.Fatal("AfterFunc with a negative duration did not fire at once")
	}
}

func TestSystemClock_UnixNanoFollowsWallClock(t *testing.T) {
	c := SystemClock()
	un, ok := c.(unixNanoClock)
	if !ok {
		t.Fatal("SystemClock lacks the fast path")
	}
	a := un.UnixNano()
	w := time.Now().UnixNano()
	b := un.UnixNano()
	if b < a {
		t.Fatal("UnixNano went backwards")
	}
	if d := w - a; d < -int64(time.Second) || d > int64(time.Second) {
		t.Fatalf("UnixNano is %v away from the wall clock", time.Duration(d))
	}
	fired := make(chan struct{})
	tm := c.AfterFunc(time.Millisecond, func() { close(fired) })
	<-fired
	tm.Stop()
}

func TestFakeClock_NeverGoesBack(t *testing.T) {
	c := NewFakeClock(epoch)
	c.Advance(-time.Hour)
	if !c.Now().Equal(epoch) {
		t.Fatalf("Now = %v after a negative Advance", c.Now())
	}
}
