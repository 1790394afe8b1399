package main

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zerotal/lock/internal/testkit/poll"
)

// termOf is the ELECTION_TERM a candidate's command printed, 0 before.
func termOf(out string) uint64 {
	m := regexp.MustCompile(`term=(\d+) value=(\S*)`).FindStringSubmatch(out)
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseUint(m[1], 10, 64)
	return n
}

// The documented flow: candidates on a shared backend, one runs the
// command, "leader" names it; the leader's elect is SIGKILLed, its guard
// stops the command, the standby leads within the lease at a higher term;
// a SIGTERM ends the last one, which resigns.
func TestElect_OneLeaderRunsAndTheStandbyTakesOverAfterAKill(t *testing.T) {
	skipShort(t, "runs lockcluster processes")
	db := filepath.Join(t.TempDir(), "locks.db")
	backend := []string{"--driver", "sqlite", "--sqlite-path", db}
	const ttl = 1500 * time.Millisecond
	candidate := func(value string) *proc {
		args := append([]string{"elect"}, backend...)
		args = append(args, "--ttl", ttl.String(), "--grace", "200ms", "--value", value, "svc", "--",
			"sh", "-c", `echo "term=$ELECTION_TERM value=$ELECTION_VALUE"; exec sleep 60`)
		return startProc(t, nil, args...)
	}
	a := candidate("a")
	poll.Until(t, 10*time.Second, "a to lead", func() bool { return termOf(a.stdout.String()) > 0 })
	b := candidate("b")
	code, out, _ := runBinary(t, nil, append(append([]string{"leader"}, backend...), "svc")...)
	first := termOf(a.stdout.String())
	if code != exitOK || !strings.Contains(out, "value=a term="+strconv.FormatUint(first, 10)) {
		t.Fatalf("leader: exit %d, %q; want a at term %d", code, out, first)
	}
	if termOf(b.stdout.String()) != 0 {
		t.Fatal("b leads beside a")
	}

	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	poll.Until(t, 10*time.Second, "b to lead", func() bool { return termOf(b.stdout.String()) > 0 })
	took := time.Since(killed)
	if second := termOf(b.stdout.String()); second <= first {
		t.Fatalf("b leads at term %d after a's %d; want a higher term", second, first)
	}
	if took > ttl+2*time.Second {
		t.Errorf("b led %v after a was killed; want within the lease %v (and a little)", took, ttl)
	}
	if strings.Contains(b.stdout.String(), "value=a") {
		t.Fatalf("b's command saw a's value: %q", b.stdout.String())
	}

	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := b.wait(t); code != 128+int(syscall.SIGTERM) {
		t.Errorf("b after SIGTERM: exit %d; want the command's %d", code, 128+int(syscall.SIGTERM))
	}
	code, out, _ = runBinary(t, nil, append(append([]string{"leader"}, backend...), "svc")...)
	if code != exitNotAcquired || strings.TrimSpace(out) != "no leader" {
		t.Fatalf("leader after the last resigned: exit %d, %q; want %d and no leader", code, out, exitNotAcquired)
	}
}

// A command that ends on its own ends elect with its status, and the
// leadership with it.
func TestElect_CommandExitResigns(t *testing.T) {
	skipShort(t, "runs lockcluster processes")
	backend := []string{"--driver", "sqlite", "--sqlite-path", filepath.Join(t.TempDir(), "locks.db")}
	code, _, stderr := runBinary(t, nil, append(append([]string{"elect"}, backend...), "job", "--", "sh", "-c", "exit 3")...)
	if code != 3 || !strings.Contains(stderr, `resigned "job"`) {
		t.Fatalf("elect: exit %d, stderr %q; want 3 and the resignation", code, stderr)
	}
	code, out, _ := runBinary(t, nil, append(append([]string{"leader"}, backend...), "job")...)
	if code != exitNotAcquired || strings.TrimSpace(out) != "no leader" {
		t.Fatalf("leader: exit %d, %q; want no leader", code, out)
	}
	for _, args := range [][]string{{"elect"}, {"elect", "job"}, {"leader"}, {"elect", "--driver", "memory", "job", "--", "true"}} {
		if code, _, _ := runBinary(t, nil, args...); code != exitUsage {
			t.Errorf("%v: exit %d; want %d", args, code, exitUsage)
		}
	}
}

// run with several --key holds them all or none: a key held elsewhere
// fails the run naming it and leaves the others free; the command sees
// every key and fence.
func TestRun_SeveralKeysAllOrNone(t *testing.T) {
	skipShort(t, "runs lockcluster processes")
	backend := []string{"--driver", "sqlite", "--sqlite-path", filepath.Join(t.TempDir(), "locks.db")}
	run := func(args ...string) (int, string, string) {
		return runBinary(t, nil, append(append([]string{"run"}, backend...), args...)...)
	}
	holder := startProc(t, nil, append(append([]string{"run"}, backend...), "--key", "b")...)
	poll.Until(t, 10*time.Second, "the holder of b", func() bool { return strings.Contains(holder.stdout.String(), "fence=") })

	code, _, stderr := run("--key", "a", "--key", "b", "--no-wait", "--", "true")
	if code != exitNotAcquired || !strings.Contains(stderr, `"b" is held`) {
		t.Fatalf("a and b with b held: exit %d, stderr %q; want %d naming b", code, stderr, exitNotAcquired)
	}
	if code, _, stderr := run("--key", "a", "--no-wait", "--", "true"); code != exitOK {
		t.Fatalf("a after the failed run: exit %d, stderr %q; want it free", code, stderr)
	}
	if err := holder.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	holder.wait(t)

	code, stdout, stderr := run("--key", "c", "--key", "a", "--key", "b", "--", "sh", "-c", `echo "keys=$LOCK_KEYS fences=$LOCK_FENCES key=$LOCK_KEY"`)
	if code != exitOK || !regexp.MustCompile(`keys=c a b fences=\d+ \d+ \d+ key=c`).MatchString(stdout) {
		t.Fatalf("run of c, a, b: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, stderr := run("--key", "a", "--key", "b", "-n", "2", "--", "true"); code != exitUsage || !strings.Contains(stderr, "take one key") {
		t.Fatalf("-n with several keys: exit %d, stderr %q; want %d", code, stderr, exitUsage)
	}
}
