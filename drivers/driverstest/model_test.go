package driverstest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
)

var (
	mutex  = drivers.Claim{}
	sem2   = drivers.Claim{Kind: drivers.Semaphore, Limit: 2}
	read   = drivers.Claim{Kind: drivers.RWLock}
	write  = drivers.Claim{Kind: drivers.RWLock, Write: true}
	minute = time.Minute
)

func req(owner string, c drivers.Claim, wait bool, keys ...string) drivers.Request {
	return drivers.Request{Keys: keys, Owner: owner, TTL: minute, Claim: c, Wait: wait}
}

// step is one call on the model and what it must answer: "ok" (acquired,
// or Release/Extend true), "busy K", "queued", "no" (Release/Extend
// false), "invalid"; done lists the waits it must end, in order.
type step struct {
	do   func(m *Model) Outcome
	want string
	done []string
}

func acq(owner string, c drivers.Claim, wait bool, keys ...string) func(*Model) Outcome {
	return func(m *Model) Outcome { return m.Acquire(req(owner, c, wait, keys...)) }
}
func rel(key, owner string) func(*Model) Outcome {
	return func(m *Model) Outcome { return m.Release(key, owner) }
}
func cancel(owner string) func(*Model) Outcome {
	return func(m *Model) Outcome { return m.Cancel(owner) }
}
func advance(to time.Duration) func(*Model) Outcome {
	return func(m *Model) Outcome { return m.Advance(to) }
}

func verdict(o Outcome) string {
	switch {
	case o.Err != nil && errors.Is(o.Err, drivers.ErrInvalid):
		return "invalid"
	case o.Err != nil:
		return "error " + o.Err.Error()
	case o.Queued:
		return "queued"
	case o.Grant.Acquired || o.OK:
		return "ok"
	case o.Grant.Busy.Key != "":
		return "busy " + o.Grant.Busy.Key
	}
	return "no"
}

func TestModel_Rules(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{"MutexFIFO", []step{
			{do: acq("a", mutex, false, "k"), want: "ok"},
			{do: acq("b", mutex, false, "k"), want: "busy k"},
			{do: acq("b", mutex, true, "k"), want: "queued"},
			{do: acq("c", mutex, true, "k"), want: "queued"},
			{do: rel("k", "a"), want: "ok", done: []string{"b"}},
			{do: rel("k", "b"), want: "ok", done: []string{"c"}},
			{do: rel("k", "b"), want: "no"},
		}},
		{"SemaphoreLimitAndQueue", []step{
			{do: acq("a", sem2, false, "k"), want: "ok"},
			{do: acq("b", sem2, false, "k"), want: "ok"},
			{do: acq("c", sem2, false, "k"), want: "busy k"},
			{do: acq("c", sem2, true, "k"), want: "queued"},
			{do: acq("d", sem2, true, "k"), want: "queued"},
			{do: rel("k", "b"), want: "ok", done: []string{"c"}},
			{do: acq("e", sem2, false, "k"), want: "busy k"},
			{do: cancel("d"), want: "no"},
			{do: rel("k", "a"), want: "ok"},
			{do: acq("e", sem2, false, "k"), want: "ok"},
		}},
		{"SemaphoreSlotFreeButQueued", []step{
			{do: acq("a", sem2, false, "k"), want: "ok"},
			{do: acq("b", sem2, false, "k"), want: "ok"},
			{do: acq("s", sem2, true, "k", "j"), want: "queued"}, // takes j, waits for k
			{do: acq("c", sem2, true, "k"), want: "queued"},
			{do: acq("x", mutex, false, "j2"), want: "ok"},
			{do: rel("k", "a"), want: "ok", done: []string{"s"}},
			{do: rel("k", "b"), want: "ok", done: []string{"c"}},
		}},
		{"WriterStopsReaders", []step{
			{do: acq("r1", read, false, "k"), want: "ok"},
			{do: acq("w", write, true, "k"), want: "queued"},
			{do: acq("r2", read, false, "k"), want: "busy k"},
			{do: acq("r2", read, true, "k"), want: "queued"},
			{do: acq("r3", read, true, "k"), want: "queued"},
			{do: rel("k", "r1"), want: "ok", done: []string{"w"}},
			{do: rel("k", "w"), want: "ok", done: []string{"r2", "r3"}},
		}},
		{"CancelledWriterLetsReadersIn", []step{
			{do: acq("r1", read, false, "k"), want: "ok"},
			{do: acq("w", write, true, "k"), want: "queued"},
			{do: acq("r2", read, true, "k"), want: "queued"},
			{do: cancel("w"), want: "no", done: []string{"r2"}},
		}},
		{"OtherSideRefused", []step{
			{do: acq("a", read, false, "k"), want: "ok"},
			{do: acq("a", write, false, "k"), want: "invalid"},
			{do: acq("a", read, false, "k"), want: "ok"},
		}},
		{"KindKeptWhileHeld", []step{
			{do: acq("a", sem2, false, "k"), want: "ok"},
			{do: acq("b", mutex, false, "k"), want: "invalid"},
			{do: acq("b", drivers.Claim{Kind: drivers.Semaphore, Limit: 3}, false, "k"), want: "invalid"},
			{do: rel("k", "a"), want: "ok"},
			{do: acq("b", mutex, false, "k"), want: "ok"},
		}},
		{"SetAllOrNone", []step{
			{do: acq("a", mutex, false, "y"), want: "ok"},
			{do: acq("b", mutex, false, "x", "y", "z"), want: "busy y"},
			{do: acq("c", mutex, false, "x"), want: "ok"},
			{do: rel("k", "c"), want: "no"},
		}},
		{"SetWaitTakesFreeQueuesBusy", []step{
			{do: acq("a", mutex, false, "y"), want: "ok"},
			{do: acq("b", mutex, true, "x", "y"), want: "queued"},
			{do: acq("c", mutex, false, "x"), want: "busy x"},
			{do: acq("c", mutex, true, "y", "x"), want: "queued"},
			{do: rel("y", "a"), want: "ok", done: []string{"b"}},
			{do: rel("x", "b"), want: "ok"},
			{do: rel("y", "b"), want: "ok", done: []string{"c"}},
		}},
		{"CancelledSetLetsGo", []step{
			{do: acq("a", mutex, false, "y"), want: "ok"},
			{do: acq("b", mutex, true, "x", "y"), want: "queued"},
			{do: acq("c", mutex, true, "x"), want: "queued"},
			{do: cancel("b"), want: "no", done: []string{"c"}},
		}},
		{"LapseHandsOn", []step{
			{do: acq("a", mutex, false, "k"), want: "ok"},
			{do: acq("b", mutex, true, "k"), want: "queued"},
			{do: advance(30 * time.Second), want: "no"},
			{do: advance(minute), want: "no", done: []string{"b"}},
			{do: advance(minute + 59*time.Second), want: "no"},
			{do: advance(2 * minute), want: "no"},
			{do: acq("c", mutex, false, "k"), want: "ok"},
		}},
		{"KilledWaitGoneGrantsStay", []step{
			{do: acq("a", mutex, false, "k"), want: "ok"},
			{do: acq("b", mutex, true, "k"), want: "queued"},
			{do: acq("c", mutex, true, "k"), want: "queued"},
			{do: func(m *Model) Outcome { return m.Kill("a", "b") }, want: "no"},
			{do: acq("d", mutex, false, "k"), want: "busy k"},
			{do: advance(minute), want: "no", done: []string{"c"}},
		}},
		// The cap on total hold time: no refresh passes it, a
		// refresh-acquire keeps the first grant's, the grant lapses at it
		// and hands the key on, and a waiter's counts from its grant.
		{"HoldCap", []step{
			{do: acqCap("a", 90*time.Second, false, "k"), want: "ok"}, // cap at 1m30s, deadline 1m
			{do: acqCap("b", 2*minute, true, "k"), want: "queued"},
			{do: advance(50 * time.Second), want: "no"},
			{do: extend("k", "a", minute), want: "ok"},           // deadline 1m30s, not 1m50s
			{do: acqCap("a", time.Hour, false, "k"), want: "ok"}, // a refresh: the cap stays
			{do: advance(89 * time.Second), want: "no"},
			{do: extend("k", "a", minute), want: "ok"},                       // still 1m30s
			{do: advance(90 * time.Second), want: "no", done: []string{"b"}}, // the cap: b's turn
			{do: extend("k", "a", minute), want: "no"},
			{do: advance(140 * time.Second), want: "no"},
			{do: extend("k", "b", minute), want: "ok"}, // b's cap from its grant: 3m30s
			{do: advance(199 * time.Second), want: "no"},
			{do: extend("k", "b", time.Hour), want: "ok"},
			{do: advance(209 * time.Second), want: "no"},
			{do: extend("k", "b", time.Hour), want: "ok"},
			{do: advance(210 * time.Second), want: "no"},
			{do: extend("k", "b", minute), want: "no"},
			{do: acqCap("c", 0, false, "k"), want: "ok"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewModel()
			for i, s := range tc.steps {
				o := s.do(m)
				var done []string
				for _, d := range o.Done {
					done = append(done, d.Owner)
				}
				if got := verdict(o); got != s.want || !slices.Equal(done, s.done) {
					t.Fatalf("step %d: %s, done %v; want %s, done %v", i, got, done, s.want, s.done)
				}
			}
		})
	}
}

func TestModel_FencesIncreaseAndRefreshKeepsThem(t *testing.T) {
	m := NewModel()
	f1 := m.Acquire(req("a", mutex, false, "k")).Grant.Fence()
	if f := m.Acquire(req("a", mutex, false, "k")).Grant.Fence(); f != f1 {
		t.Fatalf("refresh fence %d, want %d", f, f1)
	}
	m.Acquire(req("b", mutex, true, "k"))
	o := m.Release("k", "a")
	if len(o.Done) != 1 || o.Done[0].Fences[0] <= f1 {
		t.Fatalf("hand-off %+v, want a fence above %d", o.Done, f1)
	}
	if !m.Extend("k", "b", time.Second).OK || m.Extend("k", "a", time.Second).OK {
		t.Fatal("Extend: only the holder extends")
	}
	h, _ := m.Holding("k")
	if h.Holders[0].Fence != o.Done[0].Fences[0] || h.Holders[0].Remaining != time.Second {
		t.Fatalf("holding %+v after Extend", h)
	}
}

func TestModel_SetWaitHoldsTakenKeysUntilComplete(t *testing.T) {
	m := NewModel()
	m.Acquire(drivers.Request{Keys: []string{"y"}, Owner: "a", TTL: time.Second})
	m.Acquire(drivers.Request{Keys: []string{"x", "y"}, Owner: "b", TTL: time.Second, Wait: true})
	if h, _ := m.Holding("x"); h.Holders[0].Remaining != forever {
		t.Fatalf("x, taken while b waits for y: %+v, want no deadline", h)
	}
	if o := m.Advance(time.Second); len(o.Done) != 1 {
		t.Fatalf("the lapse of y must complete b's set: %+v", o)
	}
	for _, k := range []string{"x", "y"} {
		if h, _ := m.Holding(k); h.Holders[0].Owner != "b" || h.Holders[0].Remaining != time.Second {
			t.Fatalf("%s: %+v, want b's with its TTL counted from the set's completion", k, h)
		}
	}
	if o := m.Advance(2 * time.Second); len(o.Done) != 0 || len(m.Keys()) != 0 {
		t.Fatalf("b's keys must lapse together at 2s: %+v, keys %v", o, m.Keys())
	}
}

func TestModel_ReadsStopAtTheHolderCap(t *testing.T) {
	m := NewModel()
	for i := range drivers.MaxHolders {
		if o := m.Acquire(req(fmt.Sprint("r", i), read, false, "k")); !o.Grant.Acquired {
			t.Fatalf("reader %d refused", i)
		}
	}
	if o := m.Acquire(req("late", read, false, "k")); o.Grant.Acquired || o.Grant.Busy.Key != "k" {
		t.Fatalf("a reader beyond drivers.MaxHolders: %+v, want busy", o)
	}
}

func TestModel_BusyNamesTheHolderInTheWay(t *testing.T) {
	m := NewModel()
	m.Acquire(drivers.Request{Keys: []string{"k"}, Owner: "r1", TTL: 2 * time.Second, Claim: read})
	m.Acquire(drivers.Request{Keys: []string{"k"}, Owner: "r2", TTL: time.Second, Claim: read})
	m.Acquire(drivers.Request{Keys: []string{"k"}, Owner: "r3", TTL: 3 * time.Second, Claim: read})
	if b := m.Acquire(req("w", write, false, "k")).Grant.Busy; b.Holder != "r3" || b.TTL != 3*time.Second {
		t.Fatalf("a write is told of %+v, want r3, whose grant ends last", b)
	}
	m.Acquire(req("w", write, true, "k"))
	if b := m.Acquire(req("r4", read, false, "k")).Grant.Busy; b.Holder != "r2" {
		t.Fatalf("a read is told of %+v, want r2, whose grant ends first", b)
	}
}

func TestModel_RaceCancel(t *testing.T) {
	m := NewModel()
	m.Acquire(req("a", mutex, false, "k"))
	m.Acquire(req("b", mutex, true, "k"))
	m.Acquire(req("c", mutex, true, "k"))
	br := m.RaceCancel("b", rel("k", "a"))
	if len(br) != 2 {
		t.Fatalf("%d branches, want 2", len(br))
	}
	for i, want := range []string{"c", "b"} {
		if d := br[i].Outcome.Done; len(d) != 1 || d[0].Owner != want {
			t.Fatalf("branch %d: done %+v, want %s handed the key", i, d, want)
		}
	}
	if h, _ := m.Holding("k"); h.Holders[0].Owner != "a" || h.WaiterCount != 2 {
		t.Fatalf("RaceCancel changed the model it was asked of: %+v", h)
	}
	if br := m.RaceCancel("c", rel("k", "a")); len(br) != 1 {
		t.Fatalf("c is not handed the key either way: %d branches, want 1", len(br))
	}
}

func acqCap(owner string, maxHold time.Duration, wait bool, key string) func(*Model) Outcome {
	return func(m *Model) Outcome {
		r := req(owner, mutex, wait, key)
		r.MaxHold = maxHold
		return m.Acquire(r)
	}
}
func extend(key, owner string, ttl time.Duration) func(*Model) Outcome {
	return func(m *Model) Outcome { return m.Extend(key, owner, ttl) }
}

// A set's wait starts its cap with its TTL, when its last key comes.
func TestModel_HoldCapOfASetStartsWhenComplete(t *testing.T) {
	m := NewModel()
	m.Acquire(req("a", mutex, false, "y"))
	m.Acquire(drivers.Request{Keys: []string{"x", "y"}, Owner: "b", TTL: minute, MaxHold: 30 * time.Second, Wait: true})
	if o := m.Advance(minute); len(o.Done) != 1 {
		t.Fatalf("the lapse of y must complete b's set: %+v", o)
	}
	for _, k := range []string{"x", "y"} {
		if h, _ := m.Holding(k); h.Holders[0].Owner != "b" || h.Holders[0].Remaining != 30*time.Second {
			t.Fatalf("%s: %+v, want b's with its cap counted from the set's completion", k, h)
		}
	}
}
