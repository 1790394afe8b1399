// Package holdcap is what the tests of the cap on total hold time
// (drivers.Request.MaxHold) share across backends: their timings, and a
// holder's refresh loop that goes on until the backend refuses it, as a
// wedged holder's would.
package holdcap

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/internal/testkit/poll"
)

const (
	// TTL is a capped grant's TTL, Period its refresh period (a quarter of
	// the TTL), and Cap the cap: several refreshes long, short enough to be
	// reached in a test.
	TTL    = 600 * time.Millisecond
	Period = 150 * time.Millisecond
	Cap    = 2 * time.Second
	// Late is how far past the cap the first refused refresh may come on a
	// loaded machine: a refresh period, and the latency of a call on a
	// loaded machine of two cores.
	Late = Period + 2*time.Second
)

// RefreshUntilLost calls refresh every period until it reports the grant
// gone, or until bound has passed, or ctx ends: lost is when it first did
// (zero when never), last when a refresh last succeeded.
func RefreshUntilLost(ctx context.Context, refresh func(context.Context) (bool, error), period, bound time.Duration) (lost, last time.Time, err error) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	end := time.Now().Add(bound)
	for time.Now().Before(end) {
		ok, err := refresh(ctx)
		if err != nil {
			return lost, last, err
		}
		if !ok {
			return time.Now(), last, nil
		}
		last = time.Now()
		select {
		case <-tick.C:
		case <-ctx.Done():
			return lost, last, ctx.Err()
		}
	}
	return lost, last, nil
}

// HoldUntilLost is the capped holder of another process: it acquires
// req (which may wait) through d, writes "got <fence> <unix ns>" to out,
// extends the grant every quarter of its TTL until an Extend fails and
// writes "lost <ms held>", or "kept <ms held>" when it still held the key
// after four caps and ten seconds, the held time counted from the grant.
func HoldUntilLost(ctx context.Context, d drivers.Driver, req drivers.Request, out io.Writer) error {
	x, ok := d.(drivers.Extender)
	if !ok {
		return fmt.Errorf("the %T driver has no Extend", d)
	}
	g, err := d.Acquire(ctx, req)
	if err != nil {
		return err
	}
	if !g.Acquired {
		return fmt.Errorf("acquire %q: not acquired", req.Keys)
	}
	got := time.Now()
	fmt.Fprintf(out, "got %d %d\n", g.Fence(), got.UnixNano())
	lost, _, err := RefreshUntilLost(ctx, func(ctx context.Context) (bool, error) {
		return x.Extend(ctx, req.Key(), req.Owner, req.TTL)
	}, req.TTL/4, 4*req.MaxHold+10*time.Second)
	switch {
	case err != nil:
		return err
	case lost.IsZero():
		fmt.Fprintf(out, "kept %d\n", time.Since(got).Milliseconds())
	default:
		fmt.Fprintf(out, "lost %d\n", lost.Sub(got).Milliseconds())
	}
	return nil
}

// Refresh is one way a holder refreshes its grant: Extend, or an Acquire
// of the key it holds (the Manager's way without Extend), which must give
// back the grant's fence.
type Refresh struct {
	Name string
	Call func(ctx context.Context, d drivers.Driver, req drivers.Request, fence uint64) (bool, error)
}

// Refreshes are both ways.
var Refreshes = []Refresh{
	{"Extend", func(ctx context.Context, d drivers.Driver, req drivers.Request, _ uint64) (bool, error) {
		x, ok := d.(drivers.Extender)
		if !ok {
			return false, fmt.Errorf("the %T driver has no Extend", d)
		}
		return x.Extend(ctx, req.Key(), req.Owner, req.TTL)
	}},
	{"Acquire by the owner", func(ctx context.Context, d drivers.Driver, req drivers.Request, fence uint64) (bool, error) {
		g, err := d.Acquire(ctx, req)
		return g.Acquired && g.Fence() == fence, err
	}},
}

// LoseAtCap takes key for owner through d for TTL capped at Cap, calls
// queue (which lines up the next waiter), and refreshes the grant with r
// every Period: it fails t unless the refreshes keep the key until the
// cap and fail from then on, within Late. It returns the grant's fence.
func LoseAtCap(t testing.TB, d drivers.Driver, key, owner string, r Refresh, queue func()) uint64 {
	t.Helper()
	req := drivers.Request{Keys: []string{key}, Owner: owner, TTL: TTL, MaxHold: Cap}
	sent := time.Now()
	g, err := d.Acquire(t.Context(), req)
	if err != nil || !g.Acquired {
		t.Fatalf("Acquire(%q) capped at %v = %+v, %v", key, Cap, g, err)
	}
	queue()
	lost, last, err := RefreshUntilLost(t.Context(), func(ctx context.Context) (bool, error) {
		return r.Call(ctx, d, req, g.Fence())
	}, Period, Cap+10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if lost.IsZero() {
		t.Fatalf("the holder still refreshed the key %v after its grant, past its cap of %v: a refresh loop outlasts the cap", last.Sub(sent).Round(time.Millisecond), Cap)
	}
	if held := lost.Sub(sent); held < Cap || held > Cap+Late {
		t.Fatalf("the refresh failed %v after the grant; want at the cap, %v, within %v", held.Round(time.Millisecond), Cap, Late)
	}
	return g.Fence()
}

// SetCapStartsWithItsLastKey: a set that waits for a busy key holds its
// free keys meanwhile, and their cap, like their TTL, starts when the
// last key comes (driverstest's Model): waiting through b's hold of k2
// for longer than its cap, the set of a keeps k1 (the same grant, its
// fence unchanged) and, once granted, has its cap left on each key.
func SetCapStartsWithItsLastKey(t testing.TB, a, b drivers.Driver, k1, k2 string) {
	t.Helper()
	ia, ok := a.(drivers.Inspector)
	if !ok {
		t.Fatalf("the %T driver has no Inspect", a)
	}
	if g, err := b.Acquire(t.Context(), drivers.Request{Keys: []string{k2}, Owner: "in-the-way", TTL: time.Minute}); err != nil || !g.Acquired {
		t.Fatalf("Acquire(%q) = %+v, %v", k2, g, err)
	}
	type result struct {
		g   drivers.Grant
		err error
	}
	done := make(chan result, 1)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	go func() {
		g, err := a.Acquire(ctx, drivers.Request{Keys: []string{k1, k2}, Owner: "set", TTL: time.Minute, MaxHold: Cap, Wait: true,
			WaitOptions: drivers.WaitOptions{RetryDelay: 100 * time.Millisecond}})
		done <- result{g, err}
	}()
	received := false
	defer func() {
		if cancel(); !received {
			<-done
		}
	}()
	var first uint64
	poll.Until(t, 30*time.Second, "the waiting set holding "+k1, func() bool {
		h, ok, err := ia.Inspect(t.Context(), k1)
		if err == nil && ok && len(h.Holders) == 1 && h.Holders[0].Owner == "set" {
			first = h.Holders[0].Fence
			return true
		}
		return false
	})
	// The set waits for k2 longer than its cap: time passing is the case.
	<-time.After(Cap + TTL)
	if ok, err := b.Release(t.Context(), k2, "in-the-way"); err != nil || !ok {
		t.Fatalf("Release(%q) = %v, %v", k2, ok, err)
	}
	var r result
	select {
	case r = <-done:
		received = true
	case <-time.After(30 * time.Second):
		t.Fatal("the set was not granted within 30s of its last key's release")
	}
	if r.err != nil || !r.g.Acquired {
		t.Fatalf("the set's wait = %+v, %v; want granted", r.g, r.err)
	}
	if r.g.Fences[0] != first {
		t.Fatalf("the set holds %q with fence %d, not the grant it took while it waited (%d): it lost the key meanwhile, at a cap counted from then", k1, r.g.Fences[0], first)
	}
	for _, k := range []string{k1, k2} {
		h, ok, err := ia.Inspect(t.Context(), k)
		if err != nil || !ok || len(h.Holders) != 1 {
			t.Fatalf("Inspect(%q) = %+v, %v, %v", k, h, ok, err)
		}
		if left := h.Holders[0].Remaining; left > Cap || left <= 0 {
			t.Fatalf("%q has %v left once the set is granted; want at most its cap, %v, counted from then", k, left, Cap)
		}
	}
}
