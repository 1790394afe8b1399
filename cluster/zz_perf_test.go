package cluster

import (
	"os"
	"testing"
	"time"
)

func BenchmarkPerfPhase(b *testing.B) {
	nodes := startCluster(b, 3, func(c *Config) {
		c.ElectionTimeout, c.HeartbeatTimeout, c.LeaderLeaseTimeout = DefaultElectionTimeout, DefaultHeartbeatTimeout, DefaultLeaderLeaseTimeout
		c.TickInterval = time.Second
	})
	leader := waitLeader(b, nodes)
	c := newBenchClient(b)
	n := max(b.N, 64)
	b.ResetTimer()
	var p phase
	switch os.Getenv("PHASE") {
	case "serial":
		p = runPhase(b, c, leader.HTTPAddr(), 1, n, false, "serial")
	case "hot":
		p = runPhase(b, c, leader.HTTPAddr(), 8, n, true, "hot")
	default:
		p = runPhase(b, c, leader.HTTPAddr(), 32, n, false, "spread")
	}
	b.StopTimer()
	b.ReportMetric(p.opsPerSec, "cycles/s")
	b.ReportMetric(float64(p.p50.Microseconds()), "p50_us")
	b.ReportMetric(float64(p.p99.Microseconds()), "p99_us")
}
