package redis

import "testing"

// A waiter whose own attempt finds the key granted returns holding it and
// leaves the hub; a release of this process whose script granted it that
// same key may hand it over only after that. The grant is the waiter's,
// which its caller now holds: handOver must not call it an orphan, whose
// grant the driver releases (that release would free a key its caller
// believes it holds, and the next waiter would be let in beside it).
func TestHandOver_AWaiterThatLeftHoldingItsGrantIsNoOrphan(t *testing.T) {
	h := &hub{}
	holding := &waiter{owner: "holding", one: true, wake: make(chan struct{}, 1)}
	h.leave(holding, true)
	if orphan := h.handOver(holding, 7); orphan {
		t.Fatalf("a release handed the key to a waiter that had left holding it: an orphan, whose grant the driver would release under its holder")
	}
	gaveUp := &waiter{owner: "gave-up", one: true, wake: make(chan struct{}, 1)}
	h.leave(gaveUp, false)
	if orphan := h.handOver(gaveUp, 8); !orphan {
		t.Fatalf("a release handed the key to a waiter that had given up: not an orphan, so its grant would block the key for its lease")
	}
}
