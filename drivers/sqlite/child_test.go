package sqlite_test

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/zerotal/lock/internal/testkit/proctest"
	"github.com/zerotal/lock/internal/testkit/syncbuf"
)

// child is a helper process started from a test. Its stdout arrives line
// by line on lines; its stderr is kept for the failure message.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr syncbuf.Buffer
	waited chan struct{} // closed once the process has exited and been reaped
	err    error         // the exit error, set before waited is closed
}

// startChild starts cmd and kills it (by its PID) when the test ends if it
// is still running.
func startChild(t testing.TB, cmd *exec.Cmd) *child {
	t.Helper()
	c := &child{cmd: cmd, lines: make(chan string, 1024), waited: make(chan struct{})}
	cmd.Stderr = &c.stderr
	var stdout io.ReadCloser
	c.stdin, stdout = proctest.Start(t, cmd)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
		c.err = cmd.Wait() // after every read from the pipe, as os/exec requires
		close(c.waited)
	}()
	t.Cleanup(func() {
		c.kill()
		<-c.waited
	})
	return c
}

// pid is the child's process id.
func (c *child) pid() int { return c.cmd.Process.Pid }

// kill sends SIGKILL unless the process has already been reaped.
func (c *child) kill() {
	select {
	case <-c.waited:
	default:
		_ = c.cmd.Process.Signal(syscall.SIGKILL)
	}
}

// send writes one line to the child's stdin.
func (c *child) send(t testing.TB, line string) {
	t.Helper()
	if _, err := io.WriteString(c.stdin, line+"\n"); err != nil {
		t.Fatalf("write to helper %d: %v", c.pid(), err)
	}
}

// line returns the next stdout line, failing the test after within.
func (c *child) line(t testing.TB, within time.Duration) string {
	t.Helper()
	select {
	case l, ok := <-c.lines:
		if !ok {
			<-c.waited
			t.Fatalf("helper %d exited (%v) before printing a line; stderr:\n%s", c.pid(), c.err, c.stderr.String())
		}
		return l
	case <-time.After(within):
		t.Fatalf("helper %d printed nothing within %v; stderr:\n%s", c.pid(), within, c.stderr.String())
	}
	return ""
}

// wait returns the exit error, or an error when the child is still running
// after within.
func (c *child) wait(within time.Duration) error {
	select {
	case <-c.waited:
		if c.err != nil {
			return fmt.Errorf("helper %d: %w; stderr:\n%s", c.pid(), c.err, c.stderr.String())
		}
		return nil
	case <-time.After(within):
		return fmt.Errorf("helper %d still running after %v; stderr:\n%s", c.pid(), within, c.stderr.String())
	}
}
