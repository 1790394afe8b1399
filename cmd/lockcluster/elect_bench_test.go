package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zerotal/lock/cluster/clustertest"
	"github.com/zerotal/lock/drivers/redis/redistest"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// BenchmarkElectFailover measures how long an election goes without a
// leader when the leader's process dies: two "lockcluster elect"
// candidates on a shared backend, the leader's elect SIGKILLed (it
// cannot resign; its guard stops its command), and the time until the
// standby's command runs, over ZEROTAL_FAILOVER_KILLS kills (default 20),
// with a lease of ZEROTAL_FAILOVER_TTL (default 2s). A killed leader is
// replaced once its lease runs out: the figure is the TTL plus what the
// backend adds to hand the lease on. Reported: p50 and max, in ms.
//
//	go test -run '^$' -bench ElectFailover -benchtime 1x ./cmd/lockcluster/
func BenchmarkElectFailover(b *testing.B) {
	kills := 20
	if v, err := strconv.Atoi(os.Getenv("ZEROTAL_FAILOVER_KILLS")); err == nil && v > 0 {
		kills = v
	}
	ttl := 2 * time.Second
	if v, err := time.ParseDuration(os.Getenv("ZEROTAL_FAILOVER_TTL")); err == nil && v > 0 {
		ttl = v
	}
	backends := []struct {
		name string
		args func(b *testing.B) ([]string, []string) // flags, env
	}{
		{"sqlite", func(b *testing.B) ([]string, []string) {
			return []string{"--driver", "sqlite", "--sqlite-path", filepath.Join(b.TempDir(), "locks.db")}, nil
		}},
		{"redis", func(b *testing.B) ([]string, []string) {
			return []string{"--driver", "redis"}, []string{"REDIS_URL=" + redistest.Start(b).URL()}
		}},
		{"cluster", func(b *testing.B) ([]string, []string) {
			return []string{"--driver", "cluster", "--endpoints", strings.Join(clustertest.Start(b, 3, nil).Addrs(), ",")}, nil
		}},
	}
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			flags, env := be.args(b)
			for b.Loop() {
				took := failovers(b, flags, env, ttl, kills)
				slices.Sort(took)
				b.ReportMetric(float64(took[len(took)/2].Milliseconds()), "p50-ms")
				b.ReportMetric(float64(took[len(took)-1].Milliseconds()), "max-ms")
				b.ReportMetric(float64(ttl.Milliseconds()), "ttl-ms")
			}
		})
	}
}

var electLine = regexp.MustCompile(`term=(\d+)`)

// lastTerm is the term of the last leadership a candidate's command
// reported, 0 before any.
func lastTerm(p *proc) uint64 {
	all := electLine.FindAllStringSubmatch(p.stdout.String(), -1)
	if len(all) == 0 {
		return 0
	}
	n, _ := strconv.ParseUint(all[len(all)-1][1], 10, 64)
	return n
}

// failovers kills the leading candidate n times, a fresh standby joining
// after each kill, and returns how long each took to be replaced.
func failovers(b *testing.B, flags, env []string, ttl time.Duration, n int) []time.Duration {
	start := func() *proc {
		args := append([]string{"elect", "--ttl", ttl.String(), "--grace", (ttl / 4).String()}, flags...)
		args = append(args, "failover", "--", "sh", "-c", `echo "term=$ELECTION_TERM"; exec sleep 600`)
		return startProc(b, env, args...)
	}
	leader, standby := start(), (*proc)(nil)
	poll.Until(b, 30*time.Second, "the first leader", func() bool { return lastTerm(leader) > 0 })
	var took []time.Duration
	for range n {
		standby = start()
		// The standby has opened the backend and campaigns: the kill
		// measures the hand-over, not a process start.
		poll.Until(b, 30*time.Second, "the standby to stand", func() bool { return strings.Contains(standby.stderr.String(), "standing for") })
		term := lastTerm(leader)
		if err := leader.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			b.Fatal(err)
		}
		killed := time.Now()
		poll.Until(b, ttl+30*time.Second, "the standby to lead", func() bool { return lastTerm(standby) > term })
		took = append(took, time.Since(killed))
		<-leader.done
		leader = standby
	}
	_ = leader.cmd.Process.Signal(syscall.SIGTERM)
	leader.wait(b)
	return took
}
