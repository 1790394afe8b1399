//go:build unix

package main

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

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers/redis/redistest"
	"github.com/zerotal/lock/internal/testkit/poll"
	"github.com/zerotal/lock/internal/testkit/proctest"
)

// These tests run "lockcluster run" as a real process (this test binary
// running main) on a SQLite file, with a command that starts a grandchild,
// and check that the grandchild is gone when it must be.

// runProc is a "lockcluster run" child process.
type runProc struct {
	cmd  *exec.Cmd
	out  string        // the file of its stdout and stderr
	done chan struct{} // closed when it has exited
	code int           // its exit status, once done
}

// output returns what the process printed so far.
func (p *runProc) output() string {
	b, _ := os.ReadFile(p.out)
	return string(b)
}

// startRunProcess starts "lockcluster run args...". The test's end stops
// it, by its PID, if it is still running.
func startRunProcess(t *testing.T, args ...string) *runProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &runProc{out: filepath.Join(t.TempDir(), "output"), done: make(chan struct{})}
	p.cmd = exec.Command(exe, append([]string{"run"}, args...)...)
	p.cmd.Env = []string{beMainEnv + "=1", "PATH=" + os.Getenv("PATH")}
	// A file, not a pipe: Wait must return when run exits, even if a
	// grandchild it failed to stop still holds the output open.
	out, err := os.Create(p.out)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	p.cmd.Stdout, p.cmd.Stderr = out, out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitExit(p.cmd, &p.code, p.done)
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("lockcluster run output:\n%s", p.output())
		}
	})
	return p
}

// wait returns the exit status once the process has exited.
func (p *runProc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(30 * time.Second):
		t.Fatalf("lockcluster run did not exit; output:\n%s", p.output())
		return 0
	}
}

// openSQLite opens a second handle on the test's lock file.
func openSQLite(t *testing.T, db string) *lock.Manager {
	t.Helper()
	m, err := lock.Open(t.Context(), lock.Config{Driver: "sqlite", SQLite: lock.SQLiteConfig{Path: db}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func needProc(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc to see whether a process still runs")
	}
	skipShort(t, "starts lockcluster processes")
}

// ignoreTerm is a grandchild that only SIGKILL stops: it ignores SIGTERM
// (as does the sleep it becomes), then writes its PID to $1.
const ignoreTerm = `trap '' TERM
echo $$ > "$1"
exec sleep 1000
`

// runStubborn starts "lockcluster run" on a fresh SQLite file with a
// command whose grandchild ignores SIGTERM (ignoreTerm); the command waits
// for it, or with leave set exits at once and leaves it running. It returns
// the run process, the database and the grandchild's PID.
func runStubborn(t *testing.T, ttl, grace string, leave bool) (*runProc, string, int) {
	t.Helper()
	dir := t.TempDir()
	db, pidfile := filepath.Join(dir, "locks.db"), filepath.Join(dir, "pid")
	inner := proctest.Script(t, dir, "inner.sh", ignoreTerm)
	script := `trap '' TERM; sh "$0" "$1" & wait`
	if leave {
		script = `trap '' TERM; sh "$0" "$1" &`
	}
	p := startRunProcess(t, "--driver", "sqlite", "--sqlite-path", db, "--key", "k", "--ttl", ttl, "--grace", grace,
		"--", "sh", "-c", script, inner, pidfile)
	return p, db, proctest.ReadPID(t, pidfile)
}

// A lost lock stops the whole group, also a grandchild that ignores
// SIGTERM, before run returns with status 76; the grandchild had its grace.
func TestRun_LossKillsTheGrandchild(t *testing.T) {
	needProc(t)
	p, db, pid := runStubborn(t, "3s", "500ms", false)

	m := openSQLite(t, db)
	forced := time.Now()
	if err := m.Make("k", time.Second).ForceRelease(t.Context()); err != nil {
		t.Fatal(err)
	}
	code := p.wait(t)
	if proctest.Alive(pid) {
		t.Fatalf("grandchild %d still runs after run returned %d: it works outside the lock", pid, code)
	}
	if code != exitLost {
		t.Fatalf("exit %d, want %d (lost)", code, exitLost)
	}
	if took := time.Since(forced); took < 500*time.Millisecond {
		t.Fatalf("group killed %v after the loss, before its 500ms grace", took)
	}
}

// startGrandchild starts run on a fresh SQLite file with a shell that
// runs an inner script in the background and waits for it; the inner
// script, the grandchild, writes "got" to the returned mark file and
// exits on the signals traps names. It returns run's process and the
// grandchild's PID.
func startGrandchild(t *testing.T, traps string) (*runProc, int, string) {
	t.Helper()
	dir := t.TempDir()
	db, pidfile, mark := filepath.Join(dir, "locks.db"), filepath.Join(dir, "pid"), filepath.Join(dir, "mark")
	inner := proctest.Script(t, dir, "inner.sh", `trap 'echo got > "$2"; exit 0' `+traps+`
echo $$ > "$1"
while :; do sleep 0.05; done
`)
	p := startRunProcess(t, "--driver", "sqlite", "--sqlite-path", db, "--key", "k", "--ttl", "5s", "--grace", "1s",
		"--", "sh", "-c", `sh "$0" "$1" "$2" & wait`, inner, pidfile, mark)
	return p, proctest.ReadPID(t, pidfile), mark
}

// SIGTERM and SIGHUP sent to run reach the grandchild itself (it traps
// them and leaves a mark), and SIGINT stops the group too; no process of
// the group is left when run returns.
func TestRun_SignalReachesTheGrandchild(t *testing.T) {
	needProc(t)
	for _, tc := range []struct {
		sig  syscall.Signal
		mark bool // the grandchild traps it (an SIGINT is ignored in a background job)
	}{
		{syscall.SIGTERM, true},
		{syscall.SIGHUP, true},
		{syscall.SIGINT, false},
	} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			p, pid, mark := startGrandchild(t, "TERM HUP")
			if err := p.cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			code := p.wait(t)
			if proctest.Alive(pid) {
				t.Fatalf("grandchild %d still runs after run returned %d", pid, code)
			}
			if code != 128+int(tc.sig) {
				t.Errorf("exit %d, want %d (the command died of the signal)", code, 128+int(tc.sig))
			}
			if b, _ := os.ReadFile(mark); tc.mark && string(b) != "got\n" {
				t.Fatalf("the grandchild never received %v (mark %q)", tc.sig, b)
			}
		})
	}
}

// When the command exits while a process it started lingers (ignoring
// SIGTERM), run kills it before it releases the lock: whoever takes the
// lock next finds no process of the group running.
func TestRun_LingeringGrandchildDiesBeforeRelease(t *testing.T) {
	needProc(t)
	p, db, pid := runStubborn(t, "3s", "1s", true)

	m := openSQLite(t, db)
	aliveAtGrant := make(chan bool, 1)
	err := m.Block(t.Context(), "k", 5*time.Second, func(context.Context, *lock.Lock) error {
		aliveAtGrant <- proctest.Alive(pid)
		return nil
	}, lock.WithTimeout(20*time.Second), lock.WithRetryDelay(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if <-aliveAtGrant {
		t.Fatalf("grandchild %d still ran when the lock was granted to the next holder", pid)
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d, want the command's 0", code)
	}
}

// run refuses the backends whose locks no other process sees, names the
// ones that work, and does not run the command.
func TestRun_RefusesProcessPrivateBackends(t *testing.T) {
	for _, tc := range []struct {
		name string
		vars map[string]string
		args []string
	}{
		{"memory", nil, []string{"--driver", "memory"}},
		{"memory from LOCKCLUSTER_DRIVER", map[string]string{"LOCKCLUSTER_DRIVER": "memory"}, nil},
		{"sqlite without a path", nil, []string{"--driver", "sqlite"}},
		{"sqlite in memory", nil, []string{"--driver", "sqlite", "--sqlite-path", ":memory:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{"run"}, tc.args...), "--key", "k", "--", "echo", "ran")
			code, stdout, stderr := runCLI(t, tc.vars, args...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr %q", code, exitUsage, stderr)
			}
			if strings.Contains(stdout, "ran") {
				t.Fatal("the command ran")
			}
			for _, want := range []string{"--endpoints", "LOCKCLUSTER_ENDPOINTS", "REDIS_URL", "--sqlite-path"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("the refusal does not name %s: %q", want, stderr)
				}
			}
		})
	}
}

// A --grace that would let SIGKILL come after the lease's end is refused;
// without --grace, a short TTL gets a grace that fits.
func TestRun_GraceMustFitTheTTL(t *testing.T) {
	db := filepath.Join(t.TempDir(), "locks.db")
	code, _, stderr := runCLI(t, nil, "run", "--driver", "sqlite", "--sqlite-path", db, "--key", "k",
		"--ttl", "3s", "--grace", "2s", "--", "true")
	if code != exitUsage || !strings.Contains(stderr, "at most a third of the TTL, 1s") {
		t.Fatalf("exit %d, stderr %q; want %d and the longest grace allowed", code, stderr, exitUsage)
	}
	code, _, stderr = runCLI(t, nil, "run", "--driver", "sqlite", "--sqlite-path", db, "--key", "k",
		"--ttl", "3s", "--", "true")
	if code != 0 {
		t.Fatalf("default grace with --ttl 3s: exit %d, stderr %q", code, stderr)
	}
}

// --help explains the process group and --grace.
func TestRun_HelpDescribesTheProcessGroup(t *testing.T) {
	_, stdout, _ := runCLI(t, nil, "run", "--help")
	for _, want := range []string{"process group", "SIGKILL", "-grace", "at most a third of --ttl", "SIGTSTP", "memory is refused", "when run is stopped (SIGSTOP"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("run --help lacks %q", want)
		}
	}
}

// state returns the state letter of pid from /proc ("" when gone).
func state(pid int) string {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// Ctrl-Z (SIGTSTP) pauses the whole group while run itself keeps running,
// and so keeps refreshing the lock; a SIGTERM afterwards still reaches the
// paused grandchild (run adds a SIGCONT) and ends everything.
func TestRun_StopSignalPausesTheGroupNotRun(t *testing.T) {
	needProc(t)
	p, pid, mark := startGrandchild(t, "TERM")
	if err := p.cmd.Process.Signal(syscall.SIGTSTP); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the child to be stopped", func() bool { return state(pid) == "T" })
	if s := state(p.cmd.Process.Pid); s == "T" || s == "" {
		t.Fatalf("run itself is in state %q after SIGTSTP; it must keep running to keep the lock", s)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code := p.wait(t)
	if proctest.Alive(pid) {
		t.Fatalf("grandchild %d still runs after run returned %d", pid, code)
	}
	if b, _ := os.ReadFile(mark); string(b) != "got\n" {
		t.Fatalf("the paused grandchild never handled SIGTERM (mark %q)", b)
	}
}

// SIGKILL of run itself, which it cannot catch, still ends the command's
// whole group (the guard sees run's end): nothing of it runs on without a
// refreshed lock, until the TTL hands the key to the next holder, who
// would run beside it. A grandchild that ignores SIGTERM gets SIGKILL
// after the grace.
func TestRun_SIGKILLOfRunEndsTheGroup(t *testing.T) {
	needProc(t)
	p, _, pid := runStubborn(t, "30s", "500ms", false)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.wait(t)
	killed := time.Now()
	if !poll.Wait(5*time.Second, func() bool { return !proctest.Alive(pid) }) {
		t.Fatalf("grandchild %d still runs %v after run was killed: it works without the lock", pid, time.Since(killed).Round(time.Millisecond))
	}
	t.Logf("the group was gone %v after run's SIGKILL", time.Since(killed).Round(time.Millisecond))
}

// A lost lock is told as the group gets its SIGTERM, while the command
// still has its grace to stop, not once everything is over.
func TestRun_LossIsToldAtTheSIGTERM(t *testing.T) {
	needProc(t)
	p, db, pid := runStubborn(t, "9s", "3s", false)
	if err := openSQLite(t, db).Make("k", time.Second).ForceRelease(t.Context()); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 5*time.Second, "run to say why it stops the command", func() bool {
		return strings.Contains(p.output(), "SIGTERM to the command's process group")
	})
	if !proctest.Alive(pid) {
		t.Fatalf("the loss was told only after the group was gone:\n%s", p.output())
	}
	out := p.output()
	if !strings.Contains(out, "lost") {
		t.Errorf("the message does not say the lock was lost:\n%s", out)
	}
	if code := p.wait(t); code != exitLost {
		t.Fatalf("exit %d, want %d", code, exitLost)
	}
	t.Logf("run said:\n%s", p.output())
}

// The release at the end of run is bounded: with the backend frozen as the
// command ends (a redis-server stopped with SIGSTOP: nothing answers), run
// still exits within its bound (finalRelease, and as long again for the
// retry in the background), leaving the lock to its TTL.
func TestRun_FinalReleaseIsBounded(t *testing.T) {
	needProc(t)
	srv := redistest.Start(t)
	pid := srv.PID()
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	start := time.Now()
	code, _, stderr := runCLI(t, map[string]string{"REDIS_URL": srv.URL()}, "run", "--driver", "redis", "--key", "k", "--ttl", "30s",
		"--", "sh", "-c", "kill -STOP "+strconv.Itoa(pid))
	took := time.Since(start)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q; want the command's 0", code, stderr)
	}
	if bound := 2*finalRelease + time.Second; took > bound {
		t.Fatalf("run took %v with a frozen backend; want at most %v", took.Round(time.Millisecond), bound)
	}
	t.Logf("run exited %v after its start, the backend frozen; stderr: %s", took.Round(time.Millisecond), stderr)
}
