package redislock

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/zerotal/lock/drivers/redis/redistest"
)

// cpuTime is CPU time spent so far by the benchmark process (client) and
// by redis-server (server). On a shared machine the CPU a cycle costs is
// steadier than cycles per second, which other jobs' load moves.
type cpuTime struct{ client, server time.Duration }

func (c cpuTime) sub(o cpuTime) cpuTime {
	return cpuTime{client: c.client - o.client, server: c.server - o.server}
}

// cpuMeter reads both: the process's rusage, and the server's INFO cpu
// (used_cpu_user + used_cpu_sys, which count all of redis-server's
// threads).
type cpuMeter struct{ info *goredis.Client }

func newCPUMeter(srv *redistest.Server) *cpuMeter {
	return &cpuMeter{info: srv.Client()}
}

func (m *cpuMeter) read(b *testing.B) cpuTime {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	client := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	info, err := m.info.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var server time.Duration
	for _, line := range strings.Split(info, "\n") {
		name, val, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "used_cpu_user" && name != "used_cpu_sys") {
			continue
		}
		sec, err := strconv.ParseFloat(val, 64)
		if err != nil {
			b.Fatalf("INFO cpu %s: %v", line, err)
		}
		server += time.Duration(sec * float64(time.Second))
	}
	return cpuTime{client: client, server: server}
}
