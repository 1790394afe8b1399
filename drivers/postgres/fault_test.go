package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/postgres"
	"github.com/zerotal/lock/drivers/postgres/pgtest"
	"github.com/zerotal/lock/internal/testkit/poll"
	"github.com/zerotal/lock/internal/testkit/tcpproxy"
)

type waitResult struct {
	g   drivers.Grant
	err error
}

func startWait(ctx context.Context, d drivers.Driver, key, owner string) <-chan waitResult {
	done := make(chan waitResult, 1)
	go func() {
		g, err := d.Acquire(ctx, drivers.Request{Keys: []string{key}, Owner: owner, TTL: time.Hour, Wait: true})
		done <- waitResult{g, err}
	}()
	return done
}

// everyCallUnavailable checks that each call on d returns within its
// deadline (1s, and a second of slack on a loaded machine) with an error
// matching ErrUnavailable, never contention.
func everyCallUnavailable(t *testing.T, d *postgres.Driver, key, owner string) {
	t.Helper()
	calls := map[string]func(ctx context.Context) error{
		"Acquire": func(ctx context.Context) error {
			_, err := d.Acquire(ctx, drivers.Request{Keys: []string{key}, Owner: newOwner(), TTL: time.Hour})
			return err
		},
		"Acquire with Wait": func(ctx context.Context) error {
			_, err := d.Acquire(ctx, drivers.Request{Keys: []string{key}, Owner: newOwner(), TTL: time.Hour, Wait: true})
			return err
		},
		"Release":      func(ctx context.Context) error { _, err := d.Release(ctx, key, owner); return err },
		"Extend":       func(ctx context.Context) error { _, err := d.Extend(ctx, key, owner, time.Hour); return err },
		"ForceRelease": func(ctx context.Context) error { return d.ForceRelease(ctx, key) },
		"Exists":       func(ctx context.Context) error { _, err := d.Exists(ctx, key); return err },
		"Inspect":      func(ctx context.Context) error { _, _, err := d.Inspect(ctx, key); return err },
	}
	for name, call := range calls {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		start := time.Now()
		err := call(ctx)
		cancel()
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("%s took %v with a deadline of 1s", name, took)
		}
		if !errors.Is(err, drivers.ErrUnavailable) || errors.Is(err, drivers.ErrNotAcquired) {
			t.Errorf("%s with the database out of reach: %v; want ErrUnavailable", name, err)
		}
	}
}

// TestServerKilled_NothingAcknowledgedLost SIGKILLs postgres while a key
// is held and waited for: every call meanwhile is ErrUnavailable by its
// deadline; after the restart the grant is still there with its fence,
// the waiter (which rode the outage out) gets the key once it is
// released, and no fence is repeated.
func TestServerKilled_NothingAcknowledgedLost(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	holder, waiter := open(t, srv.URL()), open(t, srv.URL())
	key, owner := newKey("restart"), newOwner()
	g, err := holder.Acquire(t.Context(), drivers.Request{Keys: []string{key}, Owner: owner, TTL: time.Hour})
	if err != nil || !g.Acquired {
		t.Fatalf("Acquire = %v, %v", g, err)
	}
	wctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	done := startWait(wctx, waiter, key, newOwner())
	poll.Until(t, 10*time.Second, "the waiter queued", func() bool {
		h, _, err := holder.Inspect(t.Context(), key)
		return err == nil && h.WaiterCount == 1
	})

	srv.Kill()
	everyCallUnavailable(t, holder, key, owner)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}

	var h drivers.Holding
	poll.Until(t, 20*time.Second, "the driver reconnects", func() bool {
		var ok bool
		h, ok, err = holder.Inspect(t.Context(), key)
		return err == nil && ok
	})
	if len(h.Holders) != 1 || h.Holders[0].Owner != owner || h.Holders[0].Fence != g.Fence() {
		t.Fatalf("after the restart the key is held as %+v; want %s's grant with fence %d", h, owner, g.Fence())
	}
	if ok, err := holder.Release(t.Context(), key, owner); !ok || err != nil {
		t.Fatalf("Release after the restart = %v, %v", ok, err)
	}
	var r waitResult
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the waiter was not served within 30s of the release")
	}
	if r.err != nil || !r.g.Acquired || r.g.Fence() <= g.Fence() {
		t.Fatalf("the waiter got %+v, %v; want the key with a fence above %d", r.g, r.err, g.Fence())
	}
	g2, err := holder.Acquire(t.Context(), drivers.Request{Keys: []string{newKey("after")}, Owner: owner, TTL: time.Hour})
	if err != nil || g2.Fence() <= r.g.Fence() {
		t.Fatalf("a new key's fence after the restart = %d, %v; want above %d", g2.Fence(), err, r.g.Fence())
	}
}

// TestProxyCut_CallsEndByTheirDeadline_LostBeforeTheLease cuts the
// connection between the driver and postgres (a partition: the proxy
// swallows what is sent and never answers): every call returns by its
// deadline with ErrUnavailable, and a held lock's holder is told it lost
// the lock before its lease could have run out at the database.
func TestProxyCut_CallsEndByTheirDeadline_LostBeforeTheLease(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	proxy, err := tcpproxy.Start("127.0.0.1:"+itoa(srv.Port()), tcpproxy.Blackhole)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	url := "postgres://postgres@" + proxy.Addr() + "/postgres?sslmode=disable"
	d := open(t, url, func(c *postgres.Config) { c.ListenURL = srv.URL() })
	m := lock.New(d, lock.WithPrefix(""))
	defer m.Close()

	const ttl = 3 * time.Second
	key := newKey("cut")
	var lostAfter time.Duration
	var cause error
	err = m.Try(t.Context(), key, ttl, func(ctx context.Context, l *lock.Lock) error {
		start := time.Now()
		lost := make(chan time.Duration, 1)
		defer context.AfterFunc(ctx, func() { lost <- time.Since(start) })()
		proxy.Cut()
		everyCallUnavailable(t, d, newKey("cut-calls"), newOwner())
		select {
		case lostAfter = <-lost:
			cause = context.Cause(ctx)
		case <-time.After(30 * time.Second):
			t.Error("the holder was not told within 30s that the lock was lost")
		}
		return nil
	}, lock.WithRefresh())
	if !errors.Is(err, lock.ErrLost) || !errors.Is(cause, lock.ErrLost) {
		t.Fatalf("Try = %v (cause %v); want ErrLost", err, cause)
	}
	if lostAfter >= ttl {
		t.Fatalf("the loss was signalled %v after the cut, with a lease of %v", lostAfter, ttl)
	}
	proxy.Heal()
	poll.Until(t, 20*time.Second, "calls work again after the cut heals", func() bool {
		_, err := d.Exists(t.Context(), key)
		return err == nil
	})
}
