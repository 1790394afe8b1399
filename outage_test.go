package lock_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/cluster/clustertest"
	"github.com/zerotal/lock/drivers/postgres/pgtest"
	"github.com/zerotal/lock/drivers/redis/redistest"
	"github.com/zerotal/lock/internal/testkit/realbackends"
)

// lateBound is how late a call may return after its ctx deadline or its
// wait timeout while the backend is down (docs/PERFORMANCE.md, "Deadlines
// in an outage"). The aim is 50ms; the bound leaves room for the race
// detector on a loaded two-core machine.
const lateBound = 150 * time.Millisecond

// outage is a backend that stops answering once down is called.
type outage struct {
	name string
	up   func(t *testing.T) (m *lock.Manager, down func())
}

// outages are the real backends with a way to lose them: a redis-server
// killed with SIGKILL, and a three-node cluster that loses its quorum.
func outages() []outage {
	return []outage{
		{"redis", func(t *testing.T) (*lock.Manager, func()) {
			srv := redistest.Start(t)
			m := realbackends.Open(t, lock.Config{Driver: "redis", Redis: lock.RedisConfig{URL: srv.URL()}})
			return m, srv.Kill
		}},
		{"redis-frozen", func(t *testing.T) (*lock.Manager, func()) {
			// SIGSTOP: connections stay open and nothing answers, as
			// behind a partition.
			srv := redistest.Start(t)
			m := realbackends.Open(t, lock.Config{Driver: "redis", Redis: lock.RedisConfig{URL: srv.URL()}})
			return m, func() {
				pid := srv.PID()
				if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
					t.Fatalf("SIGSTOP redis-server: %v", err)
				}
				t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
			}
		}},
		{"postgres", func(t *testing.T) (*lock.Manager, func()) {
			srv := pgtest.Start(t)
			m := realbackends.Open(t, lock.Config{Driver: "postgres", Postgres: lock.PostgresConfig{URL: srv.URL()}})
			return m, srv.Kill
		}},
		{"cluster", func(t *testing.T) (*lock.Manager, func()) {
			c := clustertest.Start(t, 3, nil)
			m := realbackends.Open(t, lock.Config{Driver: "cluster", Cluster: lock.ClusterConfig{Addrs: c.Addrs()}})
			return m, func() {
				// Two of three gone: a quorum is lost, and whichever node
				// is left can grant nothing.
				for _, n := range c.Nodes[1:] {
					ctx, cancel := context.WithTimeout(context.Background(), clustertest.ShutdownTimeout)
					if err := n.Shutdown(ctx); err != nil {
						t.Errorf("shutdown %s: %v", n.ID(), err)
					}
					cancel()
				}
			}
		}},
	}
}

// eachOutage runs fn on every backend; fn calls down to lose it.
func eachOutage(t *testing.T, fn func(t *testing.T, m *lock.Manager, down func())) {
	if testing.Short() {
		t.Skip("starts real backends")
	}
	for _, o := range outages() {
		t.Run(o.name, func(t *testing.T) {
			t.Parallel()
			m, down := o.up(t)
			// The backend works before it goes down.
			if err := m.Try(t.Context(), "warm", time.Second, noop); err != nil {
				t.Fatalf("Try before the outage: %v", err)
			}
			fn(t, m, down)
		})
	}
}

// checkOutageError fails unless err reports the outage: ErrUnavailable,
// never contention.
func checkOutageError(t *testing.T, call string, err error) {
	t.Helper()
	if errors.Is(err, lock.ErrNotAcquired) {
		t.Errorf("%s in an outage = %v; contention reported for a backend that did not answer", call, err)
	}
	if !errors.Is(err, lock.ErrUnavailable) {
		t.Errorf("%s in an outage = %v; want an error matching ErrUnavailable", call, err)
	}
	t.Logf("%s: %v", call, err)
}

// checkOnTime fails when a call took longer than bound plus lateBound.
func checkOnTime(t *testing.T, call string, took, bound time.Duration) {
	t.Helper()
	if took > bound+lateBound {
		t.Errorf("%s took %v; want at most %v (+%v)", call, took.Round(time.Millisecond), bound, lateBound)
	}
	t.Logf("%s returned after %v (bound %v)", call, took.Round(time.Millisecond), bound)
}

// In an outage a wait that times out says the backend is unavailable: it
// must not tell the caller that somebody else holds the key.
func TestOutage_BlockReportsUnavailableNotContention(t *testing.T) {
	eachOutage(t, func(t *testing.T, m *lock.Manager, down func()) {
		down()
		const timeout = 3 * time.Second
		start := time.Now()
		err := m.Block(t.Context(), "q", 10*time.Second, noop, lock.WithTimeout(timeout))
		checkOnTime(t, "Manager.Block", time.Since(start), timeout)
		checkOutageError(t, "Manager.Block", err)

		l := m.Make("q", 10*time.Second)
		start = time.Now()
		err = l.Block(t.Context(), timeout)
		checkOnTime(t, "Lock.Block", time.Since(start), timeout)
		checkOutageError(t, "Lock.Block", err)
	})
}

// Every call returns by its ctx deadline when the backend does not answer,
// and says why beside the deadline.
func TestOutage_CallsReturnByTheirDeadline(t *testing.T) {
	eachOutage(t, func(t *testing.T, m *lock.Manager, down func()) {
		const deadline = 1500 * time.Millisecond
		held := m.Make("held", time.Minute)
		if ok, err := held.Acquire(t.Context()); !ok || err != nil {
			t.Fatalf("Acquire before the outage = %v, %v", ok, err)
		}
		down()
		calls := []struct {
			name string
			call func(ctx context.Context) error
		}{
			{"Manager.Try", func(ctx context.Context) error { return m.Try(ctx, "q", 10*time.Second, noop) }},
			{"Manager.Block", func(ctx context.Context) error {
				return m.Block(ctx, "q", 10*time.Second, noop, lock.WithTimeout(time.Minute))
			}},
			{"Lock.Acquire", func(ctx context.Context) error {
				_, err := m.Make("q", 10*time.Second).Acquire(ctx)
				return err
			}},
			{"Manager.Exists", func(ctx context.Context) error { _, err := m.Exists(ctx, "q"); return err }},
			{"Lock.Refresh", func(ctx context.Context) error { _, err := held.Refresh(ctx); return err }},
			{"Lock.Release", func(ctx context.Context) error { return held.Release(ctx) }},
		}
		for _, c := range calls {
			ctx, cancel := context.WithTimeout(t.Context(), deadline)
			start := time.Now()
			err := c.call(ctx)
			took := time.Since(start)
			cancel()
			checkOnTime(t, c.name, took, deadline)
			if err == nil {
				t.Errorf("%s in an outage succeeded", c.name)
				continue
			}
			checkOutageError(t, c.name, err)
		}
	})
}
