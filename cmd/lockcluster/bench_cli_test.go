//go:build unix

package main

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/internal/loopback"
)

// bench on the cluster driver reports the CPU time per cycle of the
// client and of each endpoint, read from the node's /metrics with the
// token; an endpoint where nothing listens is named as not read, and the
// total says it leaves it out.
func TestBench_CPUPerCycleOfClientAndNodes(t *testing.T) {
	const token = "bench-token-0123456789abcdef"
	addr := startAgent(t, token)
	dead := loopback.MustFreeAddr(t)
	const duration = time.Second
	vars := map[string]string{"LOCKCLUSTER_TOKEN": token}
	code, stdout, stderr := runCLI(t, vars, "bench", "--driver", "cluster", "--endpoints", addr+","+dead,
		"--workers", "4", "--duration", duration.String(), "--warmup", "300ms")
	if code != exitOK {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	t.Logf("bench:\n%s", stdout)
	cycles := benchCycles(t, stdout)
	client, node, total := cpuPerCycle(t, stdout, "client"), cpuPerCycle(t, stdout, addr), cpuPerCycle(t, stdout, "total")
	if client <= 0 || node <= 0 {
		t.Fatalf("cpu/cycle client %.1fµs, node %.1fµs: want both positive\n%s", client, node, stdout)
	}
	if d := total - client - node; d < -0.15 || d > 0.15 {
		t.Fatalf("total %.1fµs is not client %.1fµs + node %.1fµs\n%s", total, client, node, stdout)
	}
	// Neither process can have used more than every core for the whole
	// measured time (with slack for the edges and /proc's 10ms ticks).
	limit := (duration + 200*time.Millisecond).Seconds() * float64(runtime.NumCPU())
	for name, perCycle := range map[string]float64{"client": client, "node": node} {
		if secs := perCycle * float64(cycles) / 1e6; secs > limit {
			t.Errorf("%s used %.2fs of CPU in a %s measured time on %d CPUs", name, secs, duration, runtime.NumCPU())
		}
	}
	if secs := total * float64(cycles) / 1e6; secs > 2*limit {
		t.Errorf("client and node used %.2fs of CPU in a %s measured time on %d CPUs", secs, duration, runtime.NumCPU())
	}
	if !strings.Contains(stdout, " total without "+dead+": ") || !strings.Contains(stdout, ", "+dead+" not read") {
		t.Errorf("the output does not say that %s was not read:\n%s", dead, stdout)
	}
	if !strings.Contains(stderr, "CPU time of "+dead+" not read: ") {
		t.Errorf("stderr does not say why %s was not read: %q", dead, stderr)
	}
}

// With every endpoint read, the total leaves nothing out and nothing is
// said on stderr (a cluster without a token: /metrics is open).
func TestBench_CPUOfEveryEndpointRead(t *testing.T) {
	addr := startAgent(t, "")
	code, stdout, stderr := runCLI(t, nil, "bench", "--driver", "cluster", "--endpoints", addr,
		"--workers", "2", "--duration", "300ms", "--warmup", "100ms")
	if code != exitOK {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if cpuPerCycle(t, stdout, addr) <= 0 || strings.Contains(stdout, "not read") || strings.Contains(stdout, "without") || stderr != "" {
		t.Fatalf("stdout %q, stderr %q", stdout, stderr)
	}
}
