package lock

import (
	"context"
	"testing"
)

// quit cancels the waits registered and not removed, and any wait
// registered afterwards at once.
func TestQuitSet_CancelsRegisteredAndLaterWaits(t *testing.T) {
	var s quitSet
	kept, cancelKept := context.WithCancel(t.Context())
	defer cancelKept()
	gone, cancelGone := context.WithCancel(t.Context())
	defer cancelGone()
	var kw, gw, lw quitWait
	s.add(&kw, cancelKept)
	s.add(&gw, cancelGone)
	gw.remove() // removed: quit must not reach it
	s.quit()
	if kept.Err() == nil {
		t.Fatal("a registered wait survived quit")
	}
	if gone.Err() != nil {
		t.Fatal("quit cancelled a wait that had been removed")
	}
	late, cancelLate := context.WithCancel(t.Context())
	defer cancelLate()
	s.add(&lw, cancelLate)
	lw.remove()
	if late.Err() == nil {
		t.Fatal("a wait registered after quit was not cancelled")
	}
}
