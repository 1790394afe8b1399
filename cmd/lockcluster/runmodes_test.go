//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zerotal/lock/internal/testkit/poll"
)

// These tests run "lockcluster run" as a real process on a SQLite file
// while the test holds or takes the lock through a second handle.

// heldSQLite returns run's arguments for a fresh lock file and a handle on
// it that holds key for ttl; release frees it.
func heldSQLite(t *testing.T, key string, ttl time.Duration) (args []string, release func()) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "locks.db")
	m := openSQLite(t, db)
	l := m.Make(key, ttl)
	if ok, err := l.Acquire(t.Context()); err != nil || !ok {
		t.Fatalf("the test could not take %q: %v %v", key, ok, err)
	}
	t.Cleanup(func() { _ = l.Release(t.Context()) })
	return []string{"--driver", "sqlite", "--sqlite-path", db}, func() {
		if err := l.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

// By default run waits for a held lock, says so, and runs the command
// once the holder releases it.
func TestRun_WaitsForTheLockByDefault(t *testing.T) {
	db, release := heldSQLite(t, "k", time.Minute)
	p := startProc(t, nil, append(append([]string{"run", "--key", "k"}, db...), "--", "echo", "ran")...)
	// It says who holds it (the test's process, the Manager's default
	// holder), and how long the holder's lease has left.
	said := fmt.Sprintf(`"k" is held by another owner (pid%d@`, os.Getpid())
	poll.Until(t, 10*time.Second, "run to report it is waiting", func() bool {
		out := p.stderr.String()
		return strings.Contains(out, said) && strings.Contains(out, "unless it is refreshed; waiting")
	})
	if p.exited() || strings.Contains(p.stdout.String(), "ran") {
		t.Fatalf("run did not wait: exited %v, stdout %q", p.exited(), p.stdout)
	}
	release()
	if code := p.wait(t); code != exitOK || p.stdout.String() != "ran\n" {
		t.Fatalf("after the release: exit %d, stdout %q", code, p.stdout)
	}
}

// --no-wait (and --timeout 0, and the old --wait 0) fails at once with
// exit status 75, says it did not wait and how to wait; --timeout bounds
// the wait and says how long it waited.
func TestRun_NoWaitAndTimeout(t *testing.T) {
	db, _ := heldSQLite(t, "k", time.Minute)
	for _, tc := range []struct {
		flags []string
		want  []string
		least time.Duration
	}{
		{[]string{"--no-wait"}, []string{"did not wait (--no-wait)", "leave out --no-wait, or give a --timeout"}, 0},
		{[]string{"--timeout", "0"}, []string{"did not wait (--timeout 0)"}, 0},
		{[]string{"--timeout", "1s"}, []string{"gave up after waiting 1", "(--timeout 1s)", "give a longer --timeout"}, time.Second},
		{[]string{"-w", "1s"}, []string{"gave up after waiting 1", "(--timeout 1s)"}, time.Second},
	} {
		t.Run(strings.Join(tc.flags, " "), func(t *testing.T) {
			start := time.Now()
			code, stdout, stderr := runBinary(t, nil, append(append(append([]string{"run", "--key", "k"}, db...), tc.flags...), "--", "echo", "ran")...)
			took := time.Since(start)
			if code != exitNotAcquired || stdout != "" {
				t.Fatalf("exit %d, stdout %q; want %d and no command run", code, stdout, exitNotAcquired)
			}
			for _, w := range append(tc.want, `"k" is held by another owner`) {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q lacks %q", stderr, w)
				}
			}
			if took < tc.least {
				t.Errorf("gave up after %v, before the %v it was to wait", took, tc.least)
			}
		})
	}
	code, _, stderr := runBinary(t, nil, append(append([]string{"run", "--key", "k"}, db...), "--no-wait", "--timeout", "5s", "--", "true")...)
	if code != exitUsage || !strings.Contains(stderr, "--no-wait and --timeout contradict each other") {
		t.Errorf("--no-wait --timeout 5s: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runBinary(t, []string{"LOCKCLUSTER_TIMEOUT=5s"}, append(append([]string{"run", "--key", "k"}, db...), "--no-wait", "--", "true")...)
	if code != exitNotAcquired || !strings.Contains(stderr, "did not wait (--no-wait)") {
		t.Errorf("--no-wait with LOCKCLUSTER_TIMEOUT=5s: exit %d, stderr %q; the flag wins", code, stderr)
	}
}

// Without a command, run holds the lock: it prints the key, owner and
// fence, keeps the lock past its TTL by refreshing it, and releases it on
// SIGINT or SIGTERM with exit status 0.
func TestRun_HoldsWithoutACommand(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "locks.db")
			const ttl = 900 * time.Millisecond
			p := startProc(t, nil, "run", "--key", "maint", "--ttl", "900ms", "--driver", "sqlite", "--sqlite-path", db)
			poll.Until(t, 10*time.Second, "run's line on stdout", func() bool { return strings.HasSuffix(p.stdout.String(), "\n") })
			held := time.Now()
			line := p.stdout.String()
			if !strings.HasPrefix(line, "key=maint owner=") || !strings.Contains(line, " fence=1\n") {
				t.Fatalf("stdout %q, want key=maint owner=... fence=1", line)
			}
			owner := strings.Fields(strings.TrimPrefix(line, "key=maint owner="))[0]
			m := openSQLite(t, db)
			other := m.Make("maint", time.Minute)
			// Past the TTL, the lock is still held: run refreshes it.
			poll.Until(t, 10*time.Second, "the TTL and a margin to pass", func() bool { return time.Since(held) > ttl+300*time.Millisecond })
			if ok, err := other.Acquire(t.Context()); err != nil || ok {
				t.Fatalf("another handle took the lock run holds: %v %v", ok, err)
			}
			if p.exited() {
				t.Fatal("run exited while holding")
			}
			if err := p.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if code := p.wait(t); code != exitOK {
				t.Fatalf("exit %d after %v, want 0", code, sig)
			}
			if ok, err := other.Acquire(t.Context()); err != nil || !ok {
				t.Fatalf("the lock was not released: %v %v", ok, err)
			}
			if owner == "" || !strings.Contains(p.stderr.String(), `releasing "maint"`) {
				t.Errorf("owner %q; stderr %q", owner, p.stderr)
			}
		})
	}
}

// A held lock that is lost ends the hold with exit status 76.
func TestRun_HoldEndsWhenTheLockIsLost(t *testing.T) {
	db := filepath.Join(t.TempDir(), "locks.db")
	p := startProc(t, nil, "run", "--key", "maint", "--ttl", "3s", "--driver", "sqlite", "--sqlite-path", db)
	poll.Until(t, 10*time.Second, "run's line on stdout", func() bool { return strings.HasSuffix(p.stdout.String(), "\n") })
	m := openSQLite(t, db)
	if err := m.Make("maint", time.Second).ForceRelease(t.Context()); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != exitLost {
		t.Fatalf("exit %d, want %d (lost)", code, exitLost)
	}
	if !strings.Contains(p.stderr.String(), `lockcluster run: lost "maint" (fence 1): taken`) {
		t.Errorf("stderr %q does not say the lock was lost", p.stderr)
	}
}
