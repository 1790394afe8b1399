package pglock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers/postgres"
	"github.com/zerotal/lock/drivers/postgres/pgtest"
)

// ttl of every lock in the benchmark: long enough never to expire.
const ttl = 10 * time.Second

// locker is one cycle's two halves.
type locker interface {
	acquire(ctx context.Context, key string, wait bool) (release func(context.Context) error, err error)
}

var errBusy = errors.New("busy")

// advisory is pg_try_advisory_lock on a pooled connection held for the
// whole hold, polled every millisecond to wait.
type advisory struct{ pool *pgxpool.Pool }

func (a advisory) acquire(ctx context.Context, key string, wait bool) (func(context.Context) error, error) {
	conn, err := a.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	for {
		var ok bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtext($1))`, key).Scan(&ok); err != nil {
			conn.Release()
			return nil, err
		}
		if ok {
			break
		}
		if !wait {
			conn.Release()
			return nil, errBusy
		}
		time.Sleep(time.Millisecond) // the peer's way to wait: poll
	}
	return func(ctx context.Context) error {
		defer conn.Release()
		_, err := conn.Exec(ctx, `SELECT pg_advisory_unlock(hashtext($1))`, key)
		return err
	}, nil
}

// zerotal is the Manager on the postgres driver, as an application uses
// it: Make, then Acquire, or Block to wait, and Release.
type zerotal struct{ m *lock.Manager }

func (z zerotal) acquire(ctx context.Context, key string, wait bool) (func(context.Context) error, error) {
	l := z.m.Make(key, ttl)
	if wait {
		if err := l.Block(ctx, 0); err != nil {
			return nil, err
		}
		return l.Release, nil
	}
	ok, err := l.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errBusy
	}
	return l.Release, nil
}

type scenario struct {
	name    string
	workers int
	hot     bool
}

var scenarios = []scenario{{"serial", 1, false}, {"spread", 16, false}, {"hot", 8, true}}

// BenchmarkPostgresLocks runs every scenario for each locker on one
// postgres, b.N cycles each.
func BenchmarkPostgresLocks(b *testing.B) {
	srv := pgtest.Start(b)
	bouncer := pgtest.StartBouncer(b, srv)
	pool, err := pgxpool.New(context.Background(), srv.URL()+"&pool_max_conns=32")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	lockers := []struct {
		name string
		l    locker
	}{
		{"advisory", advisory{pool}},
		{"zerotal", zerotal{open(b, postgres.Config{URL: srv.URL(), MaxConns: 32})}},
		{"zerotal-pgbouncer", zerotal{open(b, postgres.Config{URL: bouncer.URL(), ListenURL: srv.URL(), MaxConns: 32})}},
	}
	for _, sc := range scenarios {
		for _, lk := range lockers {
			b.Run(sc.name+"/"+lk.name, func(b *testing.B) {
				prefix := "bench:" + token()[:8]
				res, elapsed, err := run(b.Context(), lk.l, sc, b.N, prefix)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(0, "ns/op")
				b.ReportMetric(float64(len(res))/elapsed.Seconds(), "cycles/s")
				b.ReportMetric(ms(percentile(res, 50)), "p50_ms")
				b.ReportMetric(ms(percentile(res, 99)), "p99_ms")
			})
		}
	}
}

func open(b *testing.B, cfg postgres.Config) *lock.Manager {
	d, err := postgres.Open(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	m := lock.New(d)
	b.Cleanup(func() { _ = m.Close() })
	return m
}

// run makes n cycles with sc's workers and returns each acquire's latency.
func run(ctx context.Context, l locker, sc scenario, n int, prefix string) ([]time.Duration, time.Duration, error) {
	var next atomic.Int64
	var mu sync.Mutex
	var lats []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for w := range sc.workers {
		key := prefix + ":hot"
		if !sc.hot {
			key = prefix + ":" + strconv.Itoa(w)
		}
		wg.Go(func() {
			var mine []time.Duration
			var err error
			for err == nil && next.Add(1) <= int64(n) {
				t0 := time.Now()
				var release func(context.Context) error
				if release, err = l.acquire(ctx, key, sc.hot); err == nil {
					mine = append(mine, time.Since(t0))
					err = release(ctx)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			lats = append(lats, mine...)
			if firstErr == nil {
				firstErr = err
			}
		})
	}
	wg.Wait()
	return lats, time.Since(start), firstErr
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(float64(len(s)-1)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func token() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
