package cpu

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func TestParseStat_CountsFieldsAfterTheLastParenthesis(t *testing.T) {
	// utime 250 and stime 50 ticks; the name holds ") (" and spaces.
	const stat = "4242 (a) (b c) S 1 4242 4242 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 3 0 12345 1000000 200 18446744073709551615\n"
	got, err := parseStat(stat)
	if err != nil || got != 3*time.Second {
		t.Fatalf("parseStat = %s, %v; want 3s", got, err)
	}
	for _, bad := range []string{"4242 no name S 1", "4242 (x) S 1 2 3", "4242 (x) S 1 4242 4242 0 -1 4194304 100 0 0 0 x 50"} {
		if _, err := parseStat(bad); err == nil {
			t.Errorf("parseStat(%q) accepted", bad)
		}
	}
}

func TestProcessCPU_Exposition(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       time.Duration
		ok         bool
	}{
		{"unlabelled", "# HELP process_cpu_seconds_total x\n# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 12.5\n", 12500 * time.Millisecond, true},
		{"after a longer name", "process_cpu_seconds_total_other 99\nprocess_cpu_seconds_total 0.25\n", 250 * time.Millisecond, true},
		{"labelled, with a brace in a value", "process_cpu_seconds_total{node=\"n}1\",x=\"a\\\"b\"} 3 1700000000000\n", 3 * time.Second, true},
		{"exponent", "process_cpu_seconds_total 1e1\n", 10 * time.Second, true},
		{"missing", "go_goroutines 7\n", 0, false},
		{"not a number", "process_cpu_seconds_total NaN\n", 0, false},
		{"negative", "process_cpu_seconds_total -1\n", 0, false},
		{"no value", "process_cpu_seconds_total\t\n", 0, false},
		{"unclosed labels", "process_cpu_seconds_total{a=\"}\n", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ProcessCPU(strings.NewReader(tc.text))
			if tc.ok && (err != nil || got != tc.want) {
				t.Fatalf("ProcessCPU = %s, %v; want %s", got, err, tc.want)
			}
			if !tc.ok && err == nil {
				t.Fatalf("ProcessCPU = %s, want an error", got)
			}
		})
	}
}

// burn spins until Self has grown by at least d, and returns how much it
// grew; the test fails after a minute of wall time.
func burn(t *testing.T, d time.Duration) time.Duration {
	t.Helper()
	start, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	x := 1
	for time.Now().Before(deadline) {
		for i := range 1_000_000 {
			x = x*31 + i
		}
		now, err := Self()
		if err != nil {
			t.Fatal(err)
		}
		if now-start >= d {
			runtime.KeepAlive(x)
			return now - start
		}
	}
	t.Fatalf("Self grew by less than %s in a minute of spinning", d)
	return 0
}

func TestSelfAndProcess_AgreeOnThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	p0, err := Process(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	wall := time.Now()
	grew := burn(t, 200*time.Millisecond)
	elapsed := time.Since(wall)
	p1, err := Process(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Both count every thread; /proc in 10ms ticks, so allow two ticks.
	if d := p1 - p0; d < grew-20*time.Millisecond {
		t.Fatalf("/proc saw %s of CPU while getrusage saw %s", d, grew)
	}
	if grew > elapsed*time.Duration(runtime.NumCPU())+20*time.Millisecond {
		t.Fatalf("getrusage saw %s of CPU in %s of wall time on %d CPUs", grew, elapsed, runtime.NumCPU())
	}
}

func TestProcess_NoSuchProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	_, err := Process(1 << 30) // above pid_max's ceiling (2^22)
	if err == nil || errors.Is(err, ErrUnsupported) {
		t.Fatalf("Process of no process: %v", err)
	}
}

// The series as a real /metrics handler serves it, with client_golang's
// process collector, is read and matches this process's CPU time.
func TestProcessCPU_FromAPrometheusHandler(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("the process collector reads /proc")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector())
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	burn(t, 50*time.Millisecond)
	before, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := ProcessCPU(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	after, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	if got < before-20*time.Millisecond || got > after+20*time.Millisecond {
		t.Fatalf("exposition says %s; getrusage said %s before and %s after", got, before, after)
	}
}
