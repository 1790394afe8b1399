package integration

import (
	"context"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/internal/testkit/holdcap"
)

// TestCluster_CappedGrantEndsAtItsCapAfterALeaderKill holds a key with a
// cap on total hold time and a TTL longer than the cap, extends it every
// period through a kill -9 of the leader, as a wedged holder would, and
// checks that the new leader still ends the grant at its cap: the cap is
// in the replicated state, not in the dead leader's memory. The next
// waiter is served at the cap (lengthened at most by the time no leader
// counted, as a TTL is), never before, and the extends are refused from
// then on.
func TestCluster_CappedGrantEndsAtItsCapAfterALeaderKill(t *testing.T) {
	c := newCluster(t)
	cl := c.client()
	ctx := t.Context()
	const (
		key    = "capped/failover"
		ttl    = 20 * time.Second // longer than the cap: only the cap ends the grant in time
		hold   = 8 * time.Second
		period = time.Second
	)
	sent := time.Now()
	g, err := cl.Acquire(ctx, drivers.Request{Keys: []string{key}, Owner: "wedged", TTL: ttl, MaxHold: hold})
	if err != nil || !g.Acquired {
		t.Fatalf("a capped acquire: %+v, %v", g, err)
	}
	granted := time.Now()

	type waited struct {
		at  time.Time
		err error
	}
	next := make(chan waited, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		_, err := cl.Acquire(wctx, drivers.Request{Keys: []string{key}, Owner: "next", TTL: 5 * time.Second, Wait: true})
		next <- waited{time.Now(), err}
	}()

	// The wedged holder: an extend every period, whatever happens, until
	// the cluster refuses one (an error, in the failover, is not a
	// refusal); the leader is killed after the second.
	var killed, recovered time.Time
	extends := 0
	refused, _, err := holdcap.RefreshUntilLost(ctx, func(ctx context.Context) (bool, error) {
		extends++
		ectx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ok, err := cl.Extend(ectx, key, "wedged", ttl)
		cancel()
		switch {
		case err != nil:
			t.Logf("extend %d: %v (a failover)", extends, err)
			ok = true
		case ok && !killed.IsZero() && recovered.IsZero():
			recovered = time.Now()
		}
		if extends == 2 {
			leader := c.waitLeader(10 * time.Second)
			killed = time.Now()
			leader.kill()
			t.Logf("killed leader %s %v after the grant", leader.id, killed.Sub(granted).Round(time.Millisecond))
		}
		return ok, nil
	}, period, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if killed.IsZero() || recovered.IsZero() {
		t.Fatalf("no extend went through after the kill (killed %v, refused %v after the grant)", !killed.IsZero(), refused.Sub(granted))
	}
	if refused.IsZero() {
		t.Fatalf("the cluster still extended the grant %v after it was made; its cap is %v", time.Since(granted), hold)
	}
	w := <-next // bounded by the wait's own 60 s
	if w.err != nil {
		t.Fatalf("the next waiter: %v", w.err)
	}
	at := w.at
	// The new leader's clock stood still from the kill until it took over
	// (election timeout and lease, 750 ms, after the last entry): a cap,
	// like a TTL, may end that much later, never earlier.
	late := granted.Add(hold + period + recovered.Sub(killed) + 3*time.Second)
	t.Logf("extend refused %v, next waiter served %v after the grant (cap %v, no leader for at most %v)",
		refused.Sub(granted).Round(time.Millisecond), at.Sub(granted).Round(time.Millisecond), hold, recovered.Sub(killed).Round(time.Millisecond))
	if at.Before(sent.Add(hold)) || refused.Before(sent.Add(hold)) {
		t.Errorf("the grant ended before its cap: refused %v, served %v after the acquire was sent", refused.Sub(sent), at.Sub(sent))
	}
	if at.After(late) {
		t.Errorf("the next waiter was served %v after the grant; want by %v", at.Sub(granted), late.Sub(granted))
	}
}
