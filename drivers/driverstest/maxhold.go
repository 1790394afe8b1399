package driverstest

import (
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
)

// capHold is the cap on total hold time the hold-cap section asks for:
// long enough for a few calls on a loaded machine, short enough to be
// reached several times per run.
const capHold = 1500 * time.Millisecond

// holdCapper skips the test unless d declares Capabilities.MaxHold.
func holdCapper(t *testing.T, d drivers.Driver) {
	t.Helper()
	if !d.Capabilities().MaxHold {
		t.Skip("driver does not declare drivers.Capabilities.MaxHold; the Manager refuses a cap it cannot enforce")
	}
}

// takeCapped acquires key for owner with a cap of maxHold: its fence, and
// the moment the call was sent (no later than the grant, so the cap is no
// earlier than sent+maxHold).
func takeCapped(t *testing.T, d drivers.Driver, key, owner string, ttl, maxHold time.Duration) (fence uint64, sent time.Time) {
	t.Helper()
	sent = time.Now()
	g, err := d.Acquire(ctxFor(t), drivers.Request{Keys: []string{key}, Owner: owner, TTL: ttl, MaxHold: maxHold})
	if err != nil || !g.Acquired {
		t.Fatalf("Acquire(%q, %q) with a cap of %v: %+v, %v; want acquired", key, owner, maxHold, g, err)
	}
	return g.Fence(), sent
}

// lapsesAtCap polls until key is free or held by someone other than
// owner, and checks that it was not before the cap: it fails when the key
// is seen gone before notBefore, or still owner's after notAfter.
func lapsesAtCap(t *testing.T, d drivers.Driver, key, owner string, notBefore, notAfter time.Time) time.Time {
	t.Helper()
	for n := 0; ; n++ {
		held, err := d.Exists(ctxFor(t), key)
		if err != nil {
			t.Fatalf("Exists(%q): %v", key, err)
		}
		now := time.Now()
		if !held {
			if now.Before(notBefore) {
				t.Fatalf("%q lapsed %v before its cap", key, notBefore.Sub(now))
			}
			return now
		}
		if now.After(notAfter) || n > 10000 {
			t.Fatalf("%q still held %v after its cap", key, now.Sub(notAfter)+capSlack)
		}
		time.Sleep(5 * time.Millisecond) // polling interval, not synchronisation
	}
}

// capSlack is how late after its cap a grant may still be seen held or a
// waiter served: a loaded machine's scheduling and, for a replicated
// backend, the expiry's round through the log.
const capSlack = 5 * time.Second

// A holder that refreshes in a loop keeps the key until the cap and loses
// it there: Extend succeeds before it and fails after it, and the next
// waiter is served at the cap.
func testMaxHoldEndsRefreshLoop(t *testing.T, s *suite) {
	a, b := s.driver(), s.driver()
	holdCapper(t, a)
	xa := extender(t, a)
	key, ownerA, ownerB := s.key("maxhold-loop"), token(), token()
	const ttl = capHold / 3
	_, sent := takeCapped(t, a, key, ownerA, ttl, capHold)
	got := time.Now()
	var done <-chan waitResult
	if b.Capabilities().Wait {
		done = startWait(ctxFor(t), b, key, ownerB, longTTL)
	}
	// The loop runs on past the cap by more than a TTL: a key it kept
	// alive there would be a refresh past the cap.
	for n := 0; n < 100 && time.Now().Before(got.Add(capHold+2*ttl)); n++ {
		at := time.Now()
		ok, err := xa.Extend(ctxFor(t), key, ownerA, ttl)
		switch {
		case err != nil:
			t.Fatalf("Extend: %v", err)
		case !ok && time.Now().Before(sent.Add(capHold)):
			t.Fatalf("Extend(%q) = false %v before its cap", key, time.Until(sent.Add(capHold)))
		case ok && at.After(got.Add(capHold)):
			t.Fatalf("Extend(%q) = true %v after its cap", key, at.Sub(got.Add(capHold)))
		}
		time.Sleep(ttl / 5) // the pace of the refresh loop under test
	}
	if done == nil {
		lapsesAtCap(t, b, key, ownerA, sent.Add(capHold), got.Add(capHold+capSlack))
	} else {
		select {
		case r := <-done:
			if r.err != nil {
				t.Fatalf("the waiter: %v; want it served at the holder's cap", r.err)
			}
			if r.at.Before(sent.Add(capHold)) {
				t.Fatalf("the waiter was served %v before the holder's cap", sent.Add(capHold).Sub(r.at))
			}
		case <-time.After(time.Until(got.Add(capHold + capSlack))):
			t.Fatalf("the waiter was not served within %v of the holder's cap", capSlack)
		}
	}
	mustExtend(t, xa, key, ownerA, ttl, false)
	if done != nil {
		mustRelease(t, b, key, ownerB, true)
	}
	mustExist(t, a, key, false)
}

// An acquire by the holder refreshes the grant but keeps its cap, whatever
// cap it asks for or none.
func testMaxHoldRefreshKeepsCap(t *testing.T, s *suite) {
	a, b := s.driver(), s.driver()
	holdCapper(t, a)
	key, owner := s.key("maxhold-refresh"), token()
	f1, sent := takeCapped(t, a, key, owner, longTTL, capHold)
	got := time.Now()
	for _, again := range []time.Duration{0, time.Hour} {
		g, err := a.Acquire(ctxFor(t), drivers.Request{Keys: []string{key}, Owner: owner, TTL: longTTL, MaxHold: again})
		if err != nil || !g.Acquired || g.Fence() != f1 {
			if time.Now().After(sent.Add(capHold)) {
				t.Skipf("the refresh came after the cap on this loaded machine: %+v, %v", g, err)
			}
			t.Fatalf("refresh of %q asking a cap of %v: %+v, %v; want acquired with fence %d", key, again, g, err, f1)
		}
	}
	lapsesAtCap(t, b, key, owner, sent.Add(capHold), got.Add(capHold+capSlack))
	mustRelease(t, a, key, owner, false)
}

// A waiter's cap counts from its grant, not from its request.
func testMaxHoldWaiterCapFromGrant(t *testing.T, s *suite) {
	a, b := s.driver(), s.driver()
	holdCapper(t, a)
	waiter(t, b)
	key, ownerA, ownerB := s.key("maxhold-waiter"), token(), token()
	mustAcquire(t, a, key, ownerA, longTTL)
	done := make(chan waitResult, 1)
	go func() {
		g, err := b.Acquire(ctxFor(t), drivers.Request{Keys: []string{key}, Owner: ownerB, TTL: longTTL, MaxHold: capHold, Wait: true, WaitOptions: waitOpts})
		done <- waitResult{fence: g.Fence(), err: err, at: time.Now()}
	}()
	stillWaiting(t, done)
	time.Sleep(capHold) // the wait outlasts the cap: time passing is what is under test
	stillWaiting(t, done)
	released := time.Now()
	mustRelease(t, a, key, ownerA, true)
	var r waitResult
	select {
	case r = <-done:
		if r.err != nil {
			t.Fatalf("the waiter: %v", r.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiter was not served on release")
	}
	lapsesAtCap(t, a, key, ownerB, released.Add(capHold), r.at.Add(capHold+capSlack))
	mustRelease(t, b, key, ownerB, false)
}
