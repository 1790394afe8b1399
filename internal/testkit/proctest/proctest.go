//go:build unix

// Package proctest helps tests that start real processes and must see
// them gone: a shell script to run, a child started with pipes (Start),
// the PID a process writes to a file, and whether that PID still runs.
package proctest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zerotal/lock/internal/testkit/poll"
)

// Script writes a shell script into dir and returns its path.
func Script(t testing.TB, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// ReadPID waits for a command to write its PID (and a newline) to file,
// and makes sure the process is gone at the test's end whatever happens.
func ReadPID(t testing.TB, file string) int {
	t.Helper()
	var pid int
	poll.Until(t, 10*time.Second, "a PID in "+file, func() bool {
		b, err := os.ReadFile(file)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	t.Cleanup(func() {
		if Alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL) // a process this test started
		}
	})
	return pid
}

// Alive reports whether pid can still run: it exists and is no zombie
// (Linux: it reads /proc/PID/stat).
func Alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	f := strings.Fields(string(stat[i+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}
