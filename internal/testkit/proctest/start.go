package proctest

import (
	"io"
	"os/exec"
	"testing"
)

// Start starts cmd, a child the test runs (often the test binary itself in
// a child mode), with a pipe to its stdin and one from its stdout, and
// fails the test when it cannot. The caller reads stdout to its end before
// cmd.Wait, as os/exec requires, and stops the child.
func Start(t testing.TB, cmd *exec.Cmd) (stdin io.WriteCloser, stdout io.ReadCloser) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if stdout, err = cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return stdin, stdout
}
