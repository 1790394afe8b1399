package driverstest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
)

// testAcquireAll checks drivers.Capabilities.Sets: every key or none, a busy
// key named with its holder, fences per key, and a refresh by the owner
// that keeps them. A backend that cannot take some keys in one step
// (drivers.ErrUnsupported) must have taken none of them; one key it always
// takes.
func testAcquireAll(t *testing.T, s *suite) {
	a, b := s.driver(), s.driver()
	ma := b
	if !ma.Capabilities().Sets {
		t.Skip("driver does not declare drivers.Capabilities.Sets; the Manager takes the keys one at a time")
	}
	one := s.key("one")
	fences, ok, _, err := TakeAll(ctxFor(t), ma, []string{one}, "solo", longTTL)
	if err != nil || !ok || len(fences) != 1 || fences[0] == 0 {
		t.Fatalf("AcquireAll of one free key = %v %v %v; want a grant with a fence", fences, ok, err)
	}
	mustRelease(t, b, one, "solo", true)

	k1, k2, k3 := s.key("m1"), s.key("m2"), s.key("m3")
	before := mustAcquire(t, a, k1, "earlier", longTTL)
	mustRelease(t, a, k1, "earlier", true)
	other := token() + ":deploy@host-3"
	mustAcquire(t, a, k2, other, longTTL)
	keys := []string{k1, k2, k3}
	_, ok, busy, err := TakeAll(ctxFor(t), ma, keys, "me", longTTL)
	if errors.Is(err, drivers.ErrUnsupported) {
		assertFree(t, a, k1, k3)
		return
	}
	if err != nil || ok {
		t.Fatalf("AcquireAll with %s held = %v %v; want refused", k2, ok, err)
	}
	if busy.Key != k2 || busy.Holder != "deploy@host-3" || busy.TTL <= 0 || busy.TTL > longTTL {
		t.Fatalf("busy = %+v; want %s held by deploy@host-3 with time left in (0, %v]", busy, k2, longTTL)
	}
	assertFree(t, a, k1, k3)

	mustRelease(t, a, k2, other, true)
	fences, ok, _, err = TakeAll(ctxFor(t), ma, keys, "me", longTTL)
	if err != nil || !ok || len(fences) != len(keys) {
		t.Fatalf("AcquireAll of free keys = %v %v %v", fences, ok, err)
	}
	if fences[0] <= before {
		t.Fatalf("fence of %s = %d after an earlier grant's %d; want larger", k1, fences[0], before)
	}
	for i, k := range keys {
		mustNotAcquire(t, a, k, "someone", longTTL)
		if fences[i] == 0 {
			t.Fatalf("fence of %s = 0", k)
		}
	}
	again, ok, _, err := TakeAll(ctxFor(t), ma, keys, "me", longTTL)
	if err != nil || !ok {
		t.Fatalf("AcquireAll by the holder = %v %v; want a refresh", ok, err)
	}
	for i := range keys {
		if again[i] != fences[i] {
			t.Fatalf("refresh changed the fences: %v, were %v", again, fences)
		}
	}
	for _, k := range keys {
		mustRelease(t, a, k, "me", true)
	}
}

func assertFree(t *testing.T, d drivers.Driver, keys ...string) {
	t.Helper()
	for _, k := range keys {
		held, err := d.Exists(ctxFor(t), k)
		if err != nil || held {
			t.Fatalf("%s after a refused AcquireAll: held %v, %v; want free", k, held, err)
		}
	}
}

// testAcquireAllWait checks drivers.Capabilities.SetWait: the free keys are taken
// at once and the busy one waited for; the wait ends with every key when
// it is released; a wait whose ctx ends leaves no key held.
func testAcquireAllWait(t *testing.T, s *suite) {
	a, b := s.driver(), s.driver()
	mw := b
	if !mw.Capabilities().SetWait {
		t.Skip("driver does not declare drivers.Capabilities.SetWait; the Manager waits for the keys one at a time")
	}
	k1, k2 := s.key("w1"), s.key("w2")
	mustAcquire(t, a, k2, "holder", longTTL)
	short, cancel := context.WithTimeout(ctxFor(t), 300*time.Millisecond)
	defer cancel()
	_, err := TakeAllWait(short, mw, []string{k1, k2}, "gave-up", longTTL, drivers.WaitOptions{})
	if errors.Is(err, drivers.ErrUnsupported) {
		// A set the driver cannot take in one step (keys in different
		// slots of a Redis Cluster) is refused having taken nothing, and
		// the Manager waits for its keys one at a time.
		assertFree(t, a, k1)
		mustRelease(t, a, k2, "holder", true)
		return
	}
	if err == nil {
		t.Fatal("AcquireAllWait with a key held to the end succeeded")
	}
	// A grant that crossed the end of the wait may be released in the
	// background (as a Waiter's), but it is released.
	eventually(t, 5*time.Second, k1+" to be free after the wait ended", func() bool {
		held, err := a.Exists(ctxFor(t), k1)
		return err == nil && !held
	})

	type answer struct {
		fences []uint64
		err    error
	}
	done := make(chan answer, 1)
	go func() {
		f, err := TakeAllWait(ctxFor(t), mw, []string{k1, k2}, "me", longTTL, drivers.WaitOptions{RetryDelay: 10 * time.Millisecond})
		done <- answer{f, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("AcquireAllWait returned %v %v while %s is held", r.fences, r.err, k2)
	case <-time.After(100 * time.Millisecond):
	}
	mustRelease(t, a, k2, "holder", true)
	r := <-done
	if r.err != nil || len(r.fences) != 2 || r.fences[0] == 0 || r.fences[1] == 0 {
		t.Fatalf("AcquireAllWait after the release = %v %v; want both keys with fences", r.fences, r.err)
	}
	mustNotAcquire(t, a, k1, "someone", longTTL)
	mustNotAcquire(t, a, k2, "someone", longTTL)
	mustRelease(t, a, k1, "me", true)
	mustRelease(t, a, k2, "me", true)
}
