package handoff

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
)

// setPort is a term whose table gives an acquire-all every key but the
// last at once and queues it for the last, which never comes: the set
// waits, holding the others, for as long as its wait lasts. It records
// every entry proposed, with when.
type setPort struct {
	mu       sync.Mutex
	last     string // the key the set waits for
	proposed []proposedEntry
}

type proposedEntry struct {
	e  fsm.Entry
	at time.Time
}

func (p *setPort) Now() int64               { return time.Now().UnixNano() }
func (p *setPort) Context() context.Context { return context.Background() }

func (p *setPort) Propose(_ context.Context, e fsm.Entry) (*fsm.Response, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.proposed = append(p.proposed, proposedEntry{e, time.Now()})
	r := engine.Result{OK: true}
	if e.Op == engine.OpAcquireKeys {
		r.Grants = make([]engine.Grant, len(e.Keys))
		for i, k := range e.Keys {
			if e.Wait && k == p.last {
				r.OK, r.Queued = false, true
				continue
			}
			// Taken at once, or refreshed: the owner holds every key
			// but the last.
			r.Grants[i] = engine.Grant{Key: k, Owner: e.Owner, Fence: uint64(i + 1), Deadline: e.Now + int64(e.TTL)}
		}
		if r.Queued {
			r.Grant = engine.Grant{Key: p.last, Owner: "holder", Fence: 100}
		}
	}
	return &fsm.Response{Result: r}, nil
}

func (p *setPort) Queued(context.Context, string, string) (bool, error) { return false, nil }

func (p *setPort) QueuedOnceDelivered(_ context.Context, key, _ string) (bool, error) {
	return key == p.last, nil
}

// keepingEntries are the entries proposed to take and keep the keys:
// every one but the clean-up's (cancel-wait, release).
func (p *setPort) keepingEntries() []proposedEntry {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []proposedEntry
	for _, pr := range p.proposed {
		if pr.e.Op != engine.OpCancelWait && pr.e.Op != engine.OpRelease {
			out = append(out, pr)
		}
	}
	return out
}

// minKeepAliveTick is the shortest interval between a waiting set's
// keep-alive entries the node may use, whatever the TTL: a 30 ms TTL
// once made it 10 ms, one extend entry per held key each time.
const minKeepAliveTick = 300 * time.Millisecond

// A waiting acquire-all keeps the keys it holds alive with one entry per
// tick, whatever the number of keys, and the tick is not shorter than
// minKeepAliveTick even when the TTL is: with a 30 ms TTL and one extend
// per held key every 10 ms, one set of 64 keys waiting 1.5 s proposed
// about 9,000 entries. Each keep-alive still comes before the lease the
// entry before it gave has run out.
func TestKeepAlive_OneEntryPerTickWhateverTheSetsSize(t *testing.T) {
	const wait, ttl = 1500 * time.Millisecond, 30 * time.Millisecond
	for _, n := range []int{2, 64} {
		t.Run(fmt.Sprintf("%d keys", n), func(t *testing.T) {
			keys := make([]string, n)
			for i := range keys {
				keys[i] = fmt.Sprintf("k%02d", i)
			}
			p := &setPort{last: keys[n-1]}
			r := NewRequests(nil)
			a, err := r.Acquire(t.Context(), p, fsm.Entry{Op: engine.OpAcquireKeys, Keys: keys, Owner: "o", TTL: ttl},
				Wait{Until: time.Now().Add(wait)})
			if err != nil || !a.TimedOut {
				t.Fatalf("Acquire = %+v, %v; want its wait run out", a, err)
			}
			r.Wait()
			entries := p.keepingEntries()
			// The entry that takes and queues, one a tick, and one for a
			// tick that fell just as the wait ended.
			bound := 2 + int(wait/minKeepAliveTick)
			if len(entries) > bound {
				t.Fatalf("%d entries proposed while a set of %d keys waited %v (TTL %v); want at most %d, one a tick of at least %v",
					len(entries), n, wait, ttl, bound, minKeepAliveTick)
			}
			if len(entries) < 2 {
				t.Fatalf("%d entries proposed while the set waited %v; want it kept alive", len(entries), wait)
			}
			for i := 1; i < len(entries); i++ {
				prev, cur := entries[i-1], entries[i]
				if gap := cur.at.Sub(prev.at); gap >= prev.e.TTL {
					t.Errorf("keep-alive %d came %v after the entry before it, whose lease was %v: the held keys lapsed", i, gap, prev.e.TTL)
				}
				if held := len(cur.e.Keys); cur.e.Op != engine.OpAcquireKeys || cur.e.Wait || held != n-1 {
					t.Errorf("keep-alive %d: %v wait %v of %d keys; want one refresh of the %d keys held", i, cur.e.Op, cur.e.Wait, held, n-1)
				}
			}
		})
	}
}
