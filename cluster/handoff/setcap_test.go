package handoff

import (
	"testing"
	"time"

	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
)

// A waiting set with a cap asks it in the entry that takes and queues
// (the table then leaves the caps pending, the set not being complete)
// and keeps its keys alive with engine.CapPending: a keep-alive carrying
// the cap would start it before the set has every key.
func TestKeepAlive_ACappedSetKeepsItsCapsPending(t *testing.T) {
	const capd = time.Minute
	p := &setPort{last: "b"}
	r := NewRequests(nil)
	a, err := r.Acquire(t.Context(), p, fsm.Entry{Op: engine.OpAcquireKeys, Keys: []string{"a", "b"}, Owner: "o", TTL: time.Second, MaxHold: capd},
		Wait{Until: time.Now().Add(2 * MinKeepAliveLease)})
	if err != nil || !a.TimedOut {
		t.Fatalf("Acquire = %+v, %v; want its wait run out", a, err)
	}
	r.Wait()
	entries := p.keepingEntries()
	if len(entries) < 2 {
		t.Fatalf("%d entries proposed while the set waited; want it kept alive", len(entries))
	}
	if e := entries[0].e; !e.Wait || e.MaxHold != capd {
		t.Fatalf("the entry that takes and queues: wait %v, MaxHold %v; want the wait with the cap asked, %v", e.Wait, e.MaxHold, capd)
	}
	for i, pr := range entries[1:] {
		if pr.e.MaxHold != engine.CapPending {
			t.Errorf("keep-alive %d: MaxHold %v; want engine.CapPending", i+1, pr.e.MaxHold)
		}
	}
}
