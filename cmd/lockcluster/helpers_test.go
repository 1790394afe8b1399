package main

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zerotal/lock/internal/testkit/syncbuf"
)

// proc is a lockcluster process: this test binary, running main.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr *syncbuf.Buffer
	done           chan struct{} // closed when it has exited
	code           int           // its exit status, once done (-1: killed by a signal)
}

// startProc starts "lockcluster args..." with the variables env (and
// PATH, nothing else). The test's end stops it, by its PID, if it still
// runs.
func startProc(t testing.TB, env []string, args ...string) *proc {
	t.Helper()
	return startProcIn(t, env, false, args...)
}

// startProcIn is startProc that, with group, starts the process as the
// leader of a process group of its own, as a shell starts a job; the
// test's end then continues the group (it may be stopped) before it stops
// the process.
func startProcIn(t testing.TB, env []string, group bool, args ...string) *proc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{stdout: &syncbuf.Buffer{}, stderr: &syncbuf.Buffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(exe, args...)
	p.cmd.Env = append(baseEnv(args), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if group {
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitExit(p.cmd, &p.code, p.done)
	t.Cleanup(func() {
		if !p.exited() {
			if group {
				_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGCONT) // the group this test started
			}
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(15 * time.Second):
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		}
		if t.Failed() {
			t.Logf("lockcluster %s:\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), p.stdout, p.stderr)
		}
	})
	return p
}

// testRaftSecret is the raft secret of the agents the tests start.
const testRaftSecret = "cmd-test-raft-secret-0123456789"

// baseEnv is the environment of a lockcluster process the tests start:
// PATH and, for an agent, the raft secret (a node refuses to start with
// nothing to authenticate raft); env given after it wins.
func baseEnv(args []string) []string {
	out := []string{beMainEnv + "=1", "PATH=" + os.Getenv("PATH")}
	if len(args) > 0 && args[0] == "agent" {
		out = append(out, "LOCKCLUSTER_RAFT_SECRET="+testRaftSecret)
	}
	return out
}

// wait returns the exit status once the process has exited.
func (p *proc) wait(t testing.TB) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(60 * time.Second):
		t.Fatalf("lockcluster did not exit; stdout:\n%s\nstderr:\n%s", p.stdout, p.stderr)
		return 0
	}
}

// exited reports whether the process has exited.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// runBinary runs "lockcluster args..." to its end with the variables env
// and returns its exit status and output.
func runBinary(t testing.TB, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	p := startProc(t, env, args...)
	code = p.wait(t)
	return code, p.stdout.String(), p.stderr.String()
}

// waitExit waits for cmd in the background: it stores cmd's exit status in
// *code (-1 when a signal ended it), then closes done.
func waitExit(cmd *exec.Cmd, code *int, done chan struct{}) {
	go func() {
		err := cmd.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			*code = ee.ExitCode()
		default:
			*code = -1
		}
		close(done)
	}()
}

// skipShort skips t under -short, which what explains ("starts an agent
// process").
func skipShort(t *testing.T, what string) {
	t.Helper()
	if testing.Short() {
		t.Skip(what)
	}
}
