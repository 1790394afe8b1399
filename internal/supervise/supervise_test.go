//go:build unix

package supervise

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func needProc(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc to see whether a process still runs")
	}
}

// ignoreTerm is a grandchild that only SIGKILL stops: it ignores SIGTERM
// (as does the sleep it becomes), then writes its PID to $1.
const ignoreTerm = `trap '' TERM
echo $$ > "$1"
exec sleep 1000
`

// script writes a shell script into dir and returns its path.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// readPID waits for a command to write its PID to file, and makes sure the
// process is gone at the test's end whatever happens.
func readPID(t *testing.T, file string) int {
	t.Helper()
	var pid int
	// The file is written by another process: poll it.
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for {
		b, err := os.ReadFile(file)
		if err == nil && strings.HasSuffix(string(b), "\n") {
			if pid, err = strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				break
			}
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("no PID in %s after 10s", file)
		}
	}
	t.Cleanup(func() {
		if alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL) // a process this test started
		}
	})
	return pid
}

// alive reports whether pid can still run: it exists and is no zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	f := strings.Fields(string(stat[i+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// When refreshes cannot keep the lease alive, the group is stopped so
// that its last process is dead before the lease runs out at the backend:
// SIGTERM at grace+margin before the end, SIGKILL at margin before it.
func TestGroup_StopsBeforeTheLeaseEnds(t *testing.T) {
	needProc(t)
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "pid")
	inner := script(t, dir, "inner.sh", ignoreTerm)
	cmd := exec.Command("sh", "-c", `trap '' TERM; sh "$0" "$1" & wait`, inner, pidfile)
	end := time.Now().Add(2 * time.Second) // a lease that is never extended
	g := &Group{Cmd: cmd, Grace: 500 * time.Millisecond, Margin: 400 * time.Millisecond,
		Lease: func() time.Time { return end }, Say: t.Logf}
	type result struct {
		err   error
		cause Cause
		at    time.Time
	}
	done := make(chan result, 1)
	go func() {
		_, cause, err := g.Supervise(context.Background())
		done <- result{err, cause, time.Now()}
	}()
	pid := readPID(t, pidfile)
	r := <-done
	if r.err != nil || r.cause != LeaseEnding {
		t.Fatalf("supervise = %v, cause %d; want cause LeaseEnding", r.err, r.cause)
	}
	if alive(pid) {
		t.Fatalf("grandchild %d still runs", pid)
	}
	if !r.at.Before(end) {
		t.Fatalf("the group was gone only %v after the lease's end", r.at.Sub(end))
	}
	if earliest := end.Add(-400 * time.Millisecond); r.at.Before(earliest) {
		t.Fatalf("the group was killed %v before the margin, cutting its grace short", earliest.Sub(r.at))
	}
}
