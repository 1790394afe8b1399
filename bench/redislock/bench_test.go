package redislock

import (
	"context"
	"strconv"
	"testing"
	"time"

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

// BenchmarkRedisLocks runs every scenario under every setup for redislock
// (the baseline) and the zerotal driver, on one redis-server, b.N cycles
// each, interleaved, and reports both libraries' figures and their ratios.
func BenchmarkRedisLocks(b *testing.B) {
	srv := redistest.Start(b)
	cpu := newCPUMeter(srv)
	for _, st := range setups {
		b.Run(st.name, func(b *testing.B) {
			for _, sc := range scenarios {
				b.Run(sc.name, func(b *testing.B) {
					base, ours := st.open(b, srv.URL(), sc.workers)
					runScenario(b, sc, base, ours, cpu)
				})
			}
		})
	}
}

func runScenario(b *testing.B, sc scenario, base, ours locker, cpu *cpuMeter) {
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
			l, keys, into := ours, ourKeys, &ourRes
			if baseFirst {
				l, keys, into = base, baseKeys, &baseRes
			}
			before := cpu.read(b)
			res, err := run(ctx, l, sc.workers, n, keys, sc.wait)
			if err != nil {
				b.Fatal(err)
			}
			res.cpu = cpu.read(b).sub(before)
			into.add(res)
		}
	}
	b.StopTimer()
	report(b, baseRes, ourRes)
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
	b.ReportMetric(ours.cpuPerCycle(), "zerotal_cpu_us/cycle")
	b.ReportMetric(base.cpuPerCycle(), "redislock_cpu_us/cycle")
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
