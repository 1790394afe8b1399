package metrics

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
	dto "github.com/prometheus/client_model/go"

	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
)

// The hold-time histogram times every grant of the log alike, whichever
// acquire entry made it: v0.1.0's entry of one key or the one acquire
// entry, of one key or of a set that takes some keys at once and waits
// for the others (a key queued for is not held: its grant comes as a
// hand-off). The entries go through a real FSM, whose OnApply feeds the
// metrics as the node's does.
func TestMetrics_HoldTimeCountsEveryAcquireEntryAlike(t *testing.T) {
	sec := func(n int) int64 { return time.Unix(1_700_000_000+int64(n), 0).UnixNano() }
	v010 := func(key, owner string, now int, wait bool) fsm.Entry {
		return fsm.Entry{Op: engine.OpAcquire, Key: key, Owner: owner, TTL: time.Hour, Now: sec(now), Wait: wait}
	}
	one := func(key, owner string, now int, wait bool) fsm.Entry {
		return fsm.Entry{Op: engine.OpAcquireKeys, Keys: []string{key}, Owner: owner, TTL: time.Hour, Now: sec(now), Wait: wait}
	}
	release := func(key, owner string, now int) fsm.Entry {
		return fsm.Entry{Op: engine.OpRelease, Key: key, Owner: owner, Now: sec(now)}
	}
	for name, single := range map[string]func(key, owner string, now int, wait bool) fsm.Entry{"entry 1": v010, "entry 10": one} {
		t.Run(name, func(t *testing.T) {
			m := newTestMetrics(t)
			f, err := fsm.New(fsm.Config{OnApply: m.ObserveApplied})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = f.Close() })
			entries := []fsm.Entry{
				single("x", "a", 1, false), // a holds x from 1 s
				{Op: engine.OpAcquireKeys, Keys: []string{"y", "x"}, Owner: "b", TTL: time.Hour, Now: sec(2), Wait: true}, // b holds y from 2 s, waits for x
				single("x", "c", 2, true),  // c waits for x behind b
				single("x", "a", 2, false), // a refresh: the same grant
				release("x", "a", 3),       // b holds x from 3 s
				release("x", "b", 5),       // c holds x from 5 s
				release("y", "b", 6),
				release("x", "c", 7),
			}
			logs := make([]*raft.Log, len(entries))
			for i, e := range entries {
				b, err := fsm.Encode(e)
				if err != nil {
					t.Fatal(err)
				}
				logs[i] = &raft.Log{Index: uint64(i + 1), Term: 1, Type: raft.LogCommand, Data: b}
			}
			for i, r := range f.ApplyBatch(logs) {
				if r, ok := r.(*fsm.Response); !ok || r.Err != nil {
					t.Fatalf("entry %d: %+v", i+1, r)
				}
			}
			var d dto.Metric
			if err := m.holdTime.Write(&d); err != nil {
				t.Fatal(err)
			}
			// x by a 1-3 s, x by b 3-5 s, y by b 2-6 s, x by c 5-7 s.
			if got, sum := d.GetHistogram().GetSampleCount(), d.GetHistogram().GetSampleSum(); got != 4 || sum != 10 {
				t.Errorf("%d holds observed, %v s in all; want 4 holds, 10 s", got, sum)
			}
			if len(m.grants) != 0 {
				t.Errorf("still timed after every release: %v", m.grants)
			}
		})
	}
}
