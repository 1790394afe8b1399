package engine

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/zerotal/lock/drivers"
)

const t0 = int64(1_000_000)

func acq(key, owner string, ttl time.Duration, now int64) Command {
	return Command{Op: OpAcquire, Key: key, Owner: owner, TTL: ttl, Now: now}
}

func acqWait(key, owner string, ttl time.Duration, now int64) Command {
	c := acq(key, owner, ttl, now)
	c.Wait = true
	return c
}

func rel(key, owner string, now int64) Command {
	return Command{Op: OpRelease, Key: key, Owner: owner, Now: now}
}

func grantOf(key, owner string, fence uint64, deadline int64) Grant {
	return Grant{Key: key, Owner: owner, Fence: fence, Deadline: deadline}
}

func one(g Grant) []Grant { return []Grant{g} }

// granted is the answer of an acquire of one key that took or refreshed g
// (of entry 1 as of the one acquire entry).
func granted(g Grant) Result { return Result{OK: true, Grant: g, Grants: one(g)} }

// take is the table's one acquire of one key.
func (t *table) take(key, owner string, ttl time.Duration, c Claim, wait bool) outcome {
	return t.acquire(&ask{keys: []string{key}, owner: owner, ttl: ttl, claim: c, wait: wait})
}

func TestTable_Operations(t *testing.T) {
	const ttl = time.Duration(100)
	cases := []struct {
		name       string
		maxKeys    int
		maxWaiters int
		setup      []Command
		cmd        Command
		want       Result
		wantErr    error
		wantMsg    string
		// state of "k" after cmd; nil: the key must be absent.
		wantInfo *Info
	}{
		{
			name:     "acquire free key",
			cmd:      acq("k", "a", ttl, t0),
			want:     granted(grantOf("k", "a", 1, t0+100)),
			wantInfo: &Info{Grant: grantOf("k", "a", 1, t0+100)},
		},
		{
			name:     "acquire held by another",
			setup:    []Command{acq("k", "a", ttl, t0)},
			cmd:      acq("k", "b", ttl, t0+10),
			want:     Result{Grant: grantOf("k", "a", 1, t0+100)},
			wantInfo: &Info{Grant: grantOf("k", "a", 1, t0+100)},
		},
		{
			name:     "refresh by the holder keeps the fence",
			setup:    []Command{acq("k", "a", ttl, t0)},
			cmd:      acq("k", "a", ttl, t0+50),
			want:     granted(grantOf("k", "a", 1, t0+150)),
			wantInfo: &Info{Grant: grantOf("k", "a", 1, t0+150)},
		},
		{
			name:     "expired key counts as free for another owner",
			setup:    []Command{acq("k", "a", ttl, t0)},
			cmd:      acq("k", "b", ttl, t0+100),
			want:     granted(grantOf("k", "b", 2, t0+200)),
			wantInfo: &Info{Grant: grantOf("k", "b", 2, t0+200)},
		},
		{
			name:     "expired key re-acquired by its old owner is a new grant",
			setup:    []Command{acq("k", "a", ttl, t0)},
			cmd:      acq("k", "a", ttl, t0+150),
			want:     granted(grantOf("k", "a", 2, t0+250)),
			wantInfo: &Info{Grant: grantOf("k", "a", 2, t0+250)},
		},
		{
			name:     "command fence above the counter is used",
			cmd:      Command{Op: OpAcquire, Key: "k", Owner: "a", TTL: ttl, Now: t0, Fence: 42},
			want:     granted(grantOf("k", "a", 42, t0+100)),
			wantInfo: &Info{Grant: grantOf("k", "a", 42, t0+100)},
		},
		{
			name:     "command fence not above the counter gives counter+1",
			setup:    []Command{{Op: OpAcquire, Key: "x", Owner: "a", TTL: ttl, Now: t0, Fence: 42}},
			cmd:      Command{Op: OpAcquire, Key: "k", Owner: "a", TTL: ttl, Now: t0, Fence: 42},
			want:     granted(grantOf("k", "a", 43, t0+100)),
			wantInfo: &Info{Grant: grantOf("k", "a", 43, t0+100)},
		},
		{
			name:     "acquire with wait queues behind the holder",
			setup:    []Command{acq("k", "a", ttl, t0)},
			cmd:      acqWait("k", "b", ttl, t0),
			want:     Result{Queued: true, Grant: grantOf("k", "a", 1, t0+100), Grants: one(Grant{})},
			wantInfo: &Info{Grant: grantOf("k", "a", 1, t0+100), Waiters: 1, Queue: []QueuedWaiter{{Owner: "b"}}},
		},
		{
			name:     "an owner already queued is not queued twice",
			setup:    []Command{acq("k", "a", ttl, t0), acqWait("k", "b", ttl, t0)},
			cmd:      acqWait("k", "b", ttl, t0),
			want:     Result{Queued: true, Grant: grantOf("k", "a", 1, t0+100)},
			wantInfo: &Info{Grant: grantOf("k", "a", 1, t0+100), Waiters: 1, Queue: []QueuedWaiter{{Owner: "b"}}},
		},
		{
			name:     "acquire with wait by the holder refreshes",
			setup:    []Command{acq("k", "a", ttl, t0)},
			cmd:      acqWait("k", "a", ttl, t0+10),
			want:     granted(grantOf("k", "a", 1, t0+110)),
			wantInfo: &Info{Grant: grantOf("k", "a", 1, t0+110)},
		},
		{
			// Expired but not purged (no OpExpire yet): the queue is served
			// first, so a later acquirer never jumps the waiters.
			name:     "expired key goes to the head of the queue, not to a later acquirer",
			setup:    []Command{acq("k", "a", ttl, t0), acqWait("k", "b", ttl, t0), acqWait("k", "c", ttl, t0)},
			cmd:      acq("k", "c", ttl, t0+100),
			want:     Result{Grant: grantOf("k", "b", 2, t0+200), Handoffs: one(grantOf("k", "b", 2, t0+200))},
			wantInfo: &Info{Grant: grantOf("k", "b", 2, t0+200), Waiters: 1, Queue: []QueuedWaiter{{Owner: "c"}}},
		},
		{
			name:     "expired key acquired by the head of the queue",
			setup:    []Command{acq("k", "a", ttl, t0), acqWait("k", "b", ttl, t0), acqWait("k", "c", ttl, t0)},
			cmd:      acq("k", "b", 2*ttl, t0+100),
			want:     Result{OK: true, Grant: grantOf("k", "b", 2, t0+300), Grants: one(grantOf("k", "b", 2, t0+300)), Handoffs: one(grantOf("k", "b", 2, t0+300))},
			wantInfo: &Info{Grant: grantOf("k", "b", 2, t0+300), Waiters: 1, Queue: []QueuedWaiter{{Owner: "c"}}},
		},
		{
			name:     "expired key with no waiters is free",
			setup:    []Command{acq("k", "a", ttl, t0)},
			cmd:      acq("k", "c", ttl, t0+100),
			want:     granted(grantOf("k", "c", 2, t0+200)),
			wantInfo: &Info{Grant: grantOf("k", "c", 2, t0+200)},
		},
		{
			name:  "release by the holder deletes the key",
			setup: []Command{acq("k", "a", ttl, t0)},
			cmd:   rel("k", "a", t0+10),
			want:  Result{OK: true},
		},
		{
			name:     "release by another owner is a no-op",
			setup:    []Command{acq("k", "a", ttl, t0)},
			cmd:      rel("k", "b", t0+10),
			want:     Result{},
			wantInfo: &Info{Grant: grantOf("k", "a", 1, t0+100)},
		},
		{
			name:     "late release after the deadline is a no-op",
			setup:    []Command{acq("k", "a", ttl, t0)},
			cmd:      rel("k", "a", t0+100),
			want:     Result{},
			wantInfo: &Info{Grant: grantOf("k", "a", 1, t0+100)},
		},
		{
			name: "release of a free key",
			cmd:  rel("k", "a", t0),
			want: Result{},
		},
		{
			name:     "release hands off to the first waiter",
			setup:    []Command{acq("k", "a", ttl, t0), acqWait("k", "b", 300, t0), acqWait("k", "c", ttl, t0)},
			cmd:      rel("k", "a", t0+10),
			want:     Result{OK: true, Handoffs: one(grantOf("k", "b", 2, t0+310))},
			wantInfo: &Info{Grant: grantOf("k", "b", 2, t0+310), Waiters: 1, Queue: []QueuedWaiter{{Owner: "c"}}},
		},
		{
			name:     "hand-off takes the command fence",
			setup:    []Command{acq("k", "a", ttl, t0), acqWait("k", "b", ttl, t0)},
			cmd:      Command{Op: OpRelease, Key: "k", Owner: "a", Now: t0, Fence: 7},
			want:     Result{OK: true, Handoffs: one(grantOf("k", "b", 7, t0+100))},
			wantInfo: &Info{Grant: grantOf("k", "b", 7, t0+100)},
		},
		{
			name:  "force release of a held key",
			setup: []Command{acq("k", "a", ttl, t0)},
			cmd:   Command{Op: OpForceRelease, Key: "k", Now: t0},
			want:  Result{OK: true},
		},
		{
			name:  "force release of an expired key still removes it",
			setup: []Command{acq("k", "a", ttl, t0)},
			cmd:   Command{Op: OpForceRelease, Key: "k", Now: t0 + 500},
			want:  Result{OK: true},
		},
		{
			name: "force release of a free key",
			cmd:  Command{Op: OpForceRelease, Key: "k", Now: t0},
			want: Result{},
		},
		{
			name:     "force release hands off",
			setup:    []Command{acq("k", "a", ttl, t0), acqWait("k", "b", ttl, t0)},
			cmd:      Command{Op: OpForceRelease, Key: "k", Now: t0 + 20},
			want:     Result{OK: true, Handoffs: one(grantOf("k", "b", 2, t0+120))},
			wantInfo: &Info{Grant: grantOf("k", "b", 2, t0+120)},
		},
		{
			name:     "extend by the holder",
			setup:    []Command{acq("k", "a", ttl, t0)},
			cmd:      Command{Op: OpExtend, Key: "k", Owner: "a", TTL: 500, Now: t0 + 50},
			want:     Result{OK: true, Grant: grantOf("k", "a", 1, t0+550)},
			wantInfo: &Info{Grant: grantOf("k", "a", 1, t0+550)},
		},
		{
			name:     "extend by another owner",
			setup:    []Command{acq("k", "a", ttl, t0)},
			cmd:      Command{Op: OpExtend, Key: "k", Owner: "b", TTL: 500, Now: t0 + 50},
			want:     Result{Grant: grantOf("k", "a", 1, t0+100)},
			wantInfo: &Info{Grant: grantOf("k", "a", 1, t0+100)},
		},
		{
			name:     "extend after the deadline never re-grants",
			setup:    []Command{acq("k", "a", ttl, t0)},
			cmd:      Command{Op: OpExtend, Key: "k", Owner: "a", TTL: 500, Now: t0 + 100},
			want:     Result{Grant: grantOf("k", "a", 1, t0+100)},
			wantInfo: &Info{Grant: grantOf("k", "a", 1, t0+100)},
		},
		{
			name: "extend of a free key",
			cmd:  Command{Op: OpExtend, Key: "k", Owner: "a", TTL: 500, Now: t0},
			want: Result{},
		},
		{
			name:  "expire of the due grant",
			setup: []Command{acq("k", "a", ttl, t0)},
			cmd:   Command{Op: OpExpire, Key: "k", Owner: "a", ExpectFence: 1, Now: t0 + 100},
			want:  Result{OK: true},
		},
		{
			name:     "expire with a stale fence is a no-op",
			setup:    []Command{acq("k", "a", ttl, t0), acq("k", "a", ttl, t0+200)},
			cmd:      Command{Op: OpExpire, Key: "k", Owner: "a", ExpectFence: 1, Now: t0 + 400},
			want:     Result{},
			wantInfo: &Info{Grant: grantOf("k", "a", 2, t0+300)},
		},
		{
			name:     "expire of a refreshed grant is a no-op",
			setup:    []Command{acq("k", "a", ttl, t0), acq("k", "a", ttl, t0+90)},
			cmd:      Command{Op: OpExpire, Key: "k", Owner: "a", ExpectFence: 1, Now: t0 + 100},
			want:     Result{},
			wantInfo: &Info{Grant: grantOf("k", "a", 1, t0+190)},
		},
		{
			name:     "expire naming another owner is a no-op",
			setup:    []Command{acq("k", "a", ttl, t0)},
			cmd:      Command{Op: OpExpire, Key: "k", Owner: "b", ExpectFence: 1, Now: t0 + 100},
			want:     Result{},
			wantInfo: &Info{Grant: grantOf("k", "a", 1, t0+100)},
		},
		{
			name:     "expire hands off",
			setup:    []Command{acq("k", "a", ttl, t0), acqWait("k", "b", ttl, t0)},
			cmd:      Command{Op: OpExpire, Key: "k", Owner: "a", ExpectFence: 1, Now: t0 + 100, Fence: 9},
			want:     Result{OK: true, Handoffs: one(grantOf("k", "b", 9, t0+200))},
			wantInfo: &Info{Grant: grantOf("k", "b", 9, t0+200)},
		},
		{
			name:     "cancel wait removes the waiter",
			setup:    []Command{acq("k", "a", ttl, t0), acqWait("k", "b", ttl, t0)},
			cmd:      Command{Op: OpCancelWait, Key: "k", Owner: "b", Now: t0},
			want:     Result{OK: true},
			wantInfo: &Info{Grant: grantOf("k", "a", 1, t0+100)},
		},
		{
			name:     "cancel wait of an owner not queued",
			setup:    []Command{acq("k", "a", ttl, t0)},
			cmd:      Command{Op: OpCancelWait, Key: "k", Owner: "b", Now: t0},
			want:     Result{},
			wantInfo: &Info{Grant: grantOf("k", "a", 1, t0+100)},
		},
		{
			name:     "time never goes backwards",
			setup:    []Command{{Op: OpTick, Now: t0 + 1000}},
			cmd:      acq("k", "a", ttl, t0),
			want:     granted(grantOf("k", "a", 1, t0+1100)),
			wantInfo: &Info{Grant: grantOf("k", "a", 1, t0+1100)},
		},
		{
			name:     "key limit refuses a new key",
			maxKeys:  1,
			setup:    []Command{acq("x", "a", ttl, t0)},
			cmd:      acq("k", "a", ttl, t0),
			wantErr:  drivers.ErrFull,
			wantMsg:  "engine: key limit 1 reached",
			wantInfo: nil,
		},
		{
			name:     "key limit still allows a refresh",
			maxKeys:  1,
			setup:    []Command{acq("k", "a", ttl, t0)},
			cmd:      acq("k", "a", ttl, t0+1),
			want:     granted(grantOf("k", "a", 1, t0+101)),
			wantInfo: &Info{Grant: grantOf("k", "a", 1, t0+101)},
		},
		{
			name:       "waiter limit refuses another waiter",
			maxWaiters: 1,
			setup:      []Command{acq("k", "a", ttl, t0), acqWait("k", "b", ttl, t0)},
			cmd:        acqWait("k", "c", ttl, t0),
			want:       Result{Grant: grantOf("k", "a", 1, t0+100)},
			wantErr:    drivers.ErrFull,
			wantMsg:    "engine: waiter limit 1 reached",
			wantInfo:   &Info{Grant: grantOf("k", "a", 1, t0+100), Waiters: 1, Queue: []QueuedWaiter{{Owner: "b"}}},
		},
		{name: "empty key", cmd: acq("", "a", ttl, t0), wantErr: drivers.ErrInvalid},
		{name: "empty owner", cmd: acq("k", "", ttl, t0), wantErr: drivers.ErrInvalid},
		{name: "zero ttl", cmd: acq("k", "a", 0, t0), wantErr: drivers.ErrInvalid},
		{name: "unknown op", cmd: Command{Op: 99, Key: "k", Now: t0}, wantErr: drivers.ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tb := newTable(tc.maxKeys, tc.maxWaiters)
			for i, c := range tc.setup {
				if r := tb.applyCommand(&c); r.Err != nil {
					t.Fatalf("setup %d: %v", i, r.Err)
				}
			}
			got := tb.applyCommand(&tc.cmd)
			if tc.wantErr != nil {
				if !errors.Is(got.Err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", got.Err, tc.wantErr)
				}
				if !strings.Contains(got.Err.Error(), tc.wantMsg) {
					t.Fatalf("err = %q, want it to mention %q", got.Err, tc.wantMsg)
				}
				got.Err = nil
			} else if got.Err != nil {
				t.Fatalf("err = %v", got.Err)
			}
			if !sameResult(got, tc.want) {
				t.Fatalf("result = %s\nwant     %s", fmtResult(got), fmtResult(tc.want))
			}
			info, ok := tb.get("k")
			switch {
			case tc.wantInfo == nil && ok:
				t.Fatalf("k = %+v, want absent", info)
			case tc.wantInfo != nil && (!ok || !reflect.DeepEqual(info, *tc.wantInfo)):
				t.Fatalf("k = %+v (present %v), want %+v", info, ok, *tc.wantInfo)
			}
			checkTable(t, tb)
		})
	}
}

func sameResult(a, b Result) bool {
	if a.OK != b.OK || a.Queued != b.Queued || a.Grant != b.Grant || !slices.Equal(a.Handoffs, b.Handoffs) || !slices.Equal(a.Grants, b.Grants) {
		return false
	}
	return true
}

func fmtResult(r Result) string {
	s := strings.Builder{}
	s.WriteString("{OK:")
	if r.OK {
		s.WriteString("true")
	} else {
		s.WriteString("false")
	}
	if r.Queued {
		s.WriteString(" Queued")
	}
	s.WriteString(" Grant:" + fmtGrant(r.Grant))
	for _, g := range r.Grants {
		s.WriteString(" Grants:" + fmtGrant(g))
	}
	for _, h := range r.Handoffs {
		s.WriteString(" Handoff:" + fmtGrant(h))
	}
	if r.Err != nil {
		s.WriteString(" Err:" + r.Err.Error())
	}
	return s.String() + "}"
}

func fmtGrant(g Grant) string {
	return fmt.Sprintf("%s/%s#%d@%d", g.Key, g.Owner, g.Fence, g.Deadline)
}

// checkTable verifies the table's invariants: every entry held and in the
// heap at its index, the heap ordered, fences within the counter, queues
// free of duplicates and of the holder.
func checkTable(t *testing.T, tb *table) {
	t.Helper()
	if len(tb.heap) != len(tb.entries) {
		t.Fatalf("heap has %d items, map %d", len(tb.heap), len(tb.entries))
	}
	for i, e := range tb.heap {
		if e.hidx != i {
			t.Fatalf("heap[%d] records index %d", i, e.hidx)
		}
		if tb.entries[e.key] != e {
			t.Fatalf("heap[%d] (%q) is not the map's entry", i, e.key)
		}
		if i > 0 && entryLess(e, tb.heap[(i-1)/2]) {
			t.Fatalf("heap order broken at %d", i)
		}
	}
	queued, capped := 0, 0
	defer func() {
		if queued != tb.waiting {
			t.Fatalf("waiting = %d, the queues hold %d", tb.waiting, queued)
		}
		if capped != len(tb.caps) {
			t.Fatalf("%d caps kept, of which %d are of a grant in the table", len(tb.caps), capped)
		}
	}()
	for k, e := range tb.entries {
		queued += e.waiters()
		for i := range e.holders() {
			if c, ok := tb.caps[e.holder(i).fence]; ok {
				capped++
				if e.holder(i).deadline > c {
					t.Fatalf("grant %d of %q: deadline %d past its cap %d", i, k, e.holder(i).deadline, c)
				}
			}
		}
		if e.key != k || e.holders() == 0 {
			t.Fatalf("bad entry %q: %+v", k, *e)
		}
		for i := range e.holders() {
			h := e.holder(i)
			if h.owner == "" || h.fence == 0 || h.fence > tb.counter || e.findHolder(h.owner) != i {
				t.Fatalf("bad grant %d of %q: %+v (counter %d)", i, k, *h, tb.counter)
			}
			if i > 0 && e.lessHolder(i, (i-1)/2) {
				t.Fatalf("grants of %q out of heap order at %d", k, i)
			}
		}
		if e.holders() > 1 && (e.claim().Kind == Mutex || e.queue.writer) {
			t.Fatalf("%q has %d holders, one exclusive", k, e.holders())
		}
		if e.queue != nil {
			if e.queue.line.len() == 0 && e.claim().Kind == Mutex {
				t.Fatalf("empty queue kept for %q", k)
			}
			if err := e.queue.line.check(); err != nil {
				t.Fatalf("queue of %q: %v", k, err)
			}
			seen := map[string]bool{}
			for w := range e.queue.line.all() {
				if e.findHolder(w.owner) >= 0 || seen[w.owner] {
					t.Fatalf("bad queue for %q: %+v", k, e.queue.line.items)
				}
				seen[w.owner] = true
			}
		}
	}
}

func TestTable_DueAndNextDeadline(t *testing.T) {
	tb := newTable(0, 0)
	if _, ok := tb.nextDeadline(); ok {
		t.Fatal("empty table has a next deadline")
	}
	for _, c := range []Command{
		acq("c", "o", 30, t0), acq("a", "o", 10, t0), acq("b", "o", 30, t0),
		acq("d", "o", 50, t0), acq("e", "o", 20, t0),
	} {
		if r := tb.applyCommand(&c); !r.OK {
			t.Fatalf("setup %+v: %+v", c, r)
		}
	}
	if d, ok := tb.nextDeadline(); !ok || d != t0+10 {
		t.Fatalf("next deadline = %d %v", d, ok)
	}
	keys := func(gs []Grant) string {
		var s []string
		for _, g := range gs {
			s = append(s, g.Key)
		}
		return strings.Join(s, ",")
	}
	for _, tc := range []struct {
		now   int64
		limit int
		want  string
	}{
		{t0 + 5, 0, ""},
		{t0 + 10, 0, "a"},
		{t0 + 30, 0, "a,e,b,c"},
		{t0 + 30, 3, "a,e,b"},
		{t0 + 100, 0, "a,e,b,c,d"},
		{t0 + 100, 1, "a"},
	} {
		if got := keys(tb.due(tc.now, tc.limit)); got != tc.want {
			t.Errorf("due(%d, %d) = %q, want %q", tc.now-t0, tc.limit, got, tc.want)
		}
	}
	// Due does not change the table.
	if len(tb.entries) != 5 {
		t.Fatalf("due changed the table: %d entries", len(tb.entries))
	}
	checkTable(t, tb)
}

func TestTable_ListSortedWithPrefixAndLimit(t *testing.T) {
	tb := newTable(0, 0)
	for _, k := range []string{"job/b", "job/a", "other", "job/c"} {
		c := acq(k, "o", 10, t0)
		tb.applyCommand(&c)
	}
	c := acqWait("job/a", "w", 10, t0)
	tb.applyCommand(&c)
	got := tb.list("job/", 2)
	if len(got) != 2 || got[0].Key != "job/a" || got[1].Key != "job/b" || got[0].Waiters != 1 {
		t.Fatalf("list = %+v", got)
	}
	if all := tb.list("", 0); len(all) != 4 || all[3].Key != "other" {
		t.Fatalf("list all = %+v", all)
	}
	if none := tb.list("zzz", 0); none == nil || len(none) != 0 {
		t.Fatalf("list none = %#v", none)
	}
}

func TestTable_ExpireDueInLiveModeHandsOffAndPurges(t *testing.T) {
	tb := newTable(0, 0)
	for _, c := range []Command{acq("a", "o", 10, t0), acq("b", "o", 20, t0), acqWait("b", "w", 100, t0), acq("c", "o", 50, t0)} {
		tb.applyCommand(&c)
	}
	tb.advance(t0 + 20)
	hs := tb.expireDue(nil)
	if len(hs) != 1 || hs[0].next != grantOf("b", "w", 4, t0+120) {
		t.Fatalf("hand-offs = %+v", hs)
	}
	if _, ok := tb.get("a"); ok {
		t.Fatal("a not purged")
	}
	if len(tb.entries) != 2 {
		t.Fatalf("entries = %d", len(tb.entries))
	}
	checkTable(t, tb)
}

func TestTable_DeadlineSaturates(t *testing.T) {
	tb := newTable(0, 0)
	c := acq("k", "o", time.Duration(1<<62), 1<<62)
	r := tb.applyCommand(&c)
	if !r.OK || r.Grant.Deadline != 1<<63-1 {
		t.Fatalf("grant = %+v", r)
	}
}

// The entry is kept to one 64-byte allocation class: memory per held lock
// is a headline figure (see BenchmarkMemoryPerLock).
func TestEntry_Is64Bytes(t *testing.T) {
	if n := unsafe.Sizeof(entry{}); n != 64 {
		t.Fatalf("entry is %d bytes, want 64", n)
	}
}
