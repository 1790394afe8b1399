package redislock

import (
	"context"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/zerotal/lock/drivers/redis/redistest"
)

// rounds is how many slices each library's cycles are cut into. The slices
// of the two libraries alternate (ABBA order), so that a change of load on
// a shared machine falls on both alike.
const rounds = 10

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

// BenchmarkRedisLocks runs every scenario for redislock (the baseline) and
// the zerotal driver on one redis-server, b.N cycles each, interleaved, and
// reports both libraries' figures and their ratios.
func BenchmarkRedisLocks(b *testing.B) {
	srv := redistest.Start(b)
	opts, err := goredis.ParseURL(srv.URL())
	if err != nil {
		b.Fatal(err)
	}
	client := goredis.NewClient(opts)
	b.Cleanup(func() { _ = client.Close() })
	base := newBSM(client)
	ours, err := newZerotal(context.Background(), srv.URL())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ours.d.Close() })

	for _, sc := range scenarios {
		b.Run(sc.name, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			baseKeys := sc.keyFor("redislock:" + token()[:8])
			ourKeys := sc.keyFor("zerotal:" + token()[:8])
			var baseRes, ourRes result
			b.ResetTimer()
			for r := 0; r < rounds; r++ {
				n := b.N / rounds
				if r < b.N%rounds {
					n++
				}
				if n == 0 {
					continue
				}
				order := []bool{r%2 == 0, r%2 != 0} // true: baseline first
				for _, baseFirst := range order {
					if baseFirst {
						res, err := run(ctx, base, sc.workers, n, baseKeys, sc.wait)
						if err != nil {
							b.Fatal(err)
						}
						baseRes.add(res)
					} else {
						res, err := run(ctx, ours, sc.workers, n, ourKeys, sc.wait)
						if err != nil {
							b.Fatal(err)
						}
						ourRes.add(res)
					}
				}
			}
			b.StopTimer()
			report(b, baseRes, ourRes)
		})
	}
}

func report(b *testing.B, base, ours result) {
	if base.cycles == 0 || ours.cycles == 0 {
		return
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ours.perSecond(), "zerotal_cycles/s")
	b.ReportMetric(base.perSecond(), "redislock_cycles/s")
	b.ReportMetric(ours.perSecond()/base.perSecond(), "throughput_x")
	b.ReportMetric(ms(percentile(ours.acquire, 50)), "zerotal_p50_ms")
	b.ReportMetric(ms(percentile(base.acquire, 50)), "redislock_p50_ms")
	b.ReportMetric(ms(percentile(ours.acquire, 99)), "zerotal_p99_ms")
	b.ReportMetric(ms(percentile(base.acquire, 99)), "redislock_p99_ms")
	b.ReportMetric(ratio(percentile(ours.acquire, 99), percentile(base.acquire, 99)), "p99_x")
	if len(ours.handoffs) > 0 && len(base.handoffs) > 0 {
		b.ReportMetric(ms(percentile(ours.handoffs, 50)), "zerotal_handoff_p50_ms")
		b.ReportMetric(ms(percentile(base.handoffs, 50)), "redislock_handoff_p50_ms")
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
