package redislock

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/zerotal/lock/drivers/redis/redistest"
)

type scenario struct {
	name    string
	workers int
	wait    bool
	keyFor  func(prefix string) func(worker int) string
}

var scenarios = []scenario{
	{name: "spread", workers: 32, keyFor: func(p string) func(int) string {
		return func(w int) string { return p + ":spread:" + strconv.Itoa(w) }
	}},
	{name: "hot", workers: 8, wait: true, keyFor: func(p string) func(int) string {
		return func(int) string { return p + ":hot" }
	}},
}

// BenchmarkRedisLocks runs every scenario for redislock and then for the
// zerotal driver on one redis-server, and logs zerotal/redislock ratios.
func BenchmarkRedisLocks(b *testing.B) {
	srv := redistest.Start(b)
	newClient := func() *goredis.Client {
		c := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
		b.Cleanup(func() { _ = c.Close() })
		return c
	}
	bsm := newBSM(newClient())
	ours, err := newZerotal(newClient())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ours.d.Close() })

	for _, sc := range scenarios {
		b.Run(sc.name, func(b *testing.B) {
			got := map[string]result{}
			for _, lib := range []struct {
				name string
				l    locker
			}{{"redislock", bsm}, {"zerotal", ours}} {
				b.Run(lib.name, func(b *testing.B) {
					keyFor := sc.keyFor(lib.name + ":" + token()[:8])
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
					defer cancel()
					b.ResetTimer()
					res, err := run(ctx, lib.l, sc.workers, b.N, keyFor, sc.wait)
					b.StopTimer()
					if err != nil {
						b.Fatal(err)
					}
					report(b, res)
					got[lib.name] = res
				})
			}
			logRatios(b, sc.name, got["redislock"], got["zerotal"])
		})
	}
}

func report(b *testing.B, r result) {
	b.ReportMetric(r.perSecond(), "cycles/s")
	b.ReportMetric(ms(percentile(r.acquire, 50)), "acq_p50_ms")
	b.ReportMetric(ms(percentile(r.acquire, 99)), "acq_p99_ms")
	if len(r.handoffs) > 0 {
		b.ReportMetric(ms(percentile(r.handoffs, 50)), "handoff_p50_ms")
	}
}

func logRatios(b *testing.B, name string, base, ours result) {
	if base.cycles == 0 || ours.cycles == 0 {
		return
	}
	line := fmt.Sprintf("%s: zerotal/redislock throughput %.2fx (%.0f vs %.0f cycles/s), acquire p99 %.2fx (%v vs %v)",
		name, ours.perSecond()/base.perSecond(), ours.perSecond(), base.perSecond(),
		ratio(percentile(ours.acquire, 99), percentile(base.acquire, 99)),
		percentile(ours.acquire, 99).Round(time.Microsecond), percentile(base.acquire, 99).Round(time.Microsecond))
	if len(ours.handoffs) > 0 {
		line += fmt.Sprintf(", hand-off p50 %v vs %v",
			percentile(ours.handoffs, 50).Round(time.Microsecond), percentile(base.handoffs, 50).Round(time.Microsecond))
	}
	b.Log(line)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
