package postgres_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/postgres"
	"github.com/zerotal/lock/drivers/postgres/pgtest"
	"github.com/zerotal/lock/internal/testkit/poll"
	"github.com/zerotal/lock/internal/testkit/proctest"
)

// The test binary doubles as the program of the multi-process tests:
// started with childEnv set, TestMain runs the named child instead of the
// tests, on the database childURL.
const (
	childEnv = "ZEROTAL_POSTGRES_CHILD"
	childURL = "ZEROTAL_POSTGRES_URL"
	childKey = "ZEROTAL_POSTGRES_KEY"
	childLog = "ZEROTAL_POSTGRES_LOG" // the file the hammer's children append to
)

func runChild(mode string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d, err := postgres.Open(ctx, postgres.Config{URL: os.Getenv(childURL)})
	if err == nil {
		switch mode {
		case "hold":
			err = childHold(ctx, d)
		case "hammer":
			err = childHammer(ctx, d)
		case "wait":
			err = childWait(ctx, d)
		default:
			err = fmt.Errorf("unknown child %q", mode)
		}
		_ = d.Close()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "child %s (pid %d): %v\n", mode, os.Getpid(), err)
		return 1
	}
	return 0
}

// childHold takes the key for 3s, prints "held FENCE" and waits for
// stdin to close (its SIGKILL, in the test).
func childHold(ctx context.Context, d *postgres.Driver) error {
	g, err := d.Acquire(ctx, drivers.Request{Keys: []string{os.Getenv(childKey)}, Owner: newOwner(), TTL: 3 * time.Second})
	if err != nil || !g.Acquired {
		return fmt.Errorf("acquire: %v %v", g, err)
	}
	fmt.Printf("held %d\n", g.Fence())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}

// childWait waits for the key, prints "got FENCE" once it has it and
// waits for stdin to close.
func childWait(ctx context.Context, d *postgres.Driver) error {
	g, err := d.Acquire(ctx, drivers.Request{Keys: []string{os.Getenv(childKey)}, Owner: newOwner(), TTL: 30 * time.Second, Wait: true})
	if err != nil || !g.Acquired {
		return fmt.Errorf("acquire wait: %v %v", g, err)
	}
	fmt.Printf("got %d\n", g.Fence())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}

// childHammer waits for the key 20 times, and while it holds it appends
// "in FENCE PID" and "out FENCE PID" to the shared log, one write each
// (O_APPEND): in the log, every "in" is followed by its own "out".
func childHammer(ctx context.Context, d *postgres.Driver) error {
	f, err := os.OpenFile(os.Getenv(childLog), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	key, pid := os.Getenv(childKey), os.Getpid()
	for range 20 {
		owner := newOwner()
		g, err := d.Acquire(ctx, drivers.Request{Keys: []string{key}, Owner: owner, TTL: 30 * time.Second, Wait: true})
		if err != nil || !g.Acquired {
			return fmt.Errorf("acquire wait: %v %v", g, err)
		}
		for _, what := range []string{"in", "out"} {
			if _, err := fmt.Fprintf(f, "%s %d %d\n", what, g.Fence(), pid); err != nil {
				return err
			}
		}
		if ok, err := d.Release(ctx, key, owner); !ok || err != nil {
			return fmt.Errorf("release: %v %v", ok, err)
		}
	}
	return nil
}

// newOwner is a fresh owner token.
func newOwner() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func newKey(name string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "pgtest/" + name + "/" + hex.EncodeToString(b)
}

// startChild starts the test binary as child mode with env; it is
// SIGKILLed at the test's end if still running.
func startChild(t *testing.T, mode string, env ...string) (*exec.Cmd, io.WriteCloser, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), childEnv+"="+mode), env...)
	cmd.Stderr = os.Stderr
	stdin, stdout := proctest.Start(t, cmd)
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill() // this test's own child
		_ = cmd.Wait()
	})
	return cmd, stdin, bufio.NewScanner(stdout)
}

// TestProcesses_Hammer: three processes wait for one key 20 times each;
// the log they append to while they hold it shows never two holders at
// once, and fences strictly increasing in the order of the holds.
func TestProcesses_Hammer(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	open(t, srv.URL()) // the schema, before the processes race to make it
	logFile := t.TempDir() + "/holds.log"
	if err := os.WriteFile(logFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	key := newKey("hammer")
	var cmds []*exec.Cmd
	for range 3 {
		cmd, _, _ := startChild(t, "hammer", childURL+"="+srv.URL(), childKey+"="+key, childLog+"="+logFile)
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v", cmd.Process.Pid, err)
		}
	}
	raw, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 3*20*2 {
		t.Fatalf("%d lines in the log, want %d", len(lines), 3*20*2)
	}
	var last uint64
	for i := 0; i < len(lines); i += 2 {
		in, out := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if in[0] != "in" || out[0] != "out" || in[1] != out[1] || in[2] != out[2] {
			t.Fatalf("two holders at once: line %d %q, then %q", i, lines[i], lines[i+1])
		}
		fence, _ := strconv.ParseUint(in[1], 10, 64)
		if fence <= last {
			t.Fatalf("fence %d after %d: not strictly increasing (line %d)", fence, last, i)
		}
		last = fence
	}
}

// TestProcesses_KilledHolderLosesTheKeyAfterItsTTL: a process holds a key
// for 3s and is SIGKILLed; another process's handle cannot take the key
// before the grant's deadline (as the database reports it), and takes it,
// with a larger fence, soon after.
func TestProcesses_KilledHolderLosesTheKeyAfterItsTTL(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	d := open(t, srv.URL())
	key := newKey("killed-holder")
	cmd, _, out := startChild(t, "hold", childURL+"="+srv.URL(), childKey+"="+key)
	if !out.Scan() {
		t.Fatalf("the holder printed nothing: %v", out.Err())
	}
	var held uint64
	if _, err := fmt.Sscanf(out.Text(), "held %d", &held); err != nil {
		t.Fatalf("holder said %q", out.Text())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	h, ok, err := d.Inspect(t.Context(), key)
	if err != nil || !ok {
		t.Fatalf("Inspect after the kill = %v, %v, %v; want the dead holder's grant", h, ok, err)
	}
	deadline := time.Now().Add(h.Holders[0].Remaining)
	owner := newOwner()
	var fence uint64
	poll.Until(t, h.Holders[0].Remaining+10*time.Second, "the key free after the dead holder's TTL", func() bool {
		g, err := d.Acquire(t.Context(), drivers.Request{Keys: []string{key}, Owner: owner, TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if g.Acquired {
			fence = g.Fence()
			return true
		}
		return false
	})
	// A small allowance for the two clocks read: the database's (the
	// deadline) and this process's (when it was granted).
	if early := time.Until(deadline); early > 50*time.Millisecond {
		t.Fatalf("the key was granted %v before the dead holder's deadline", early)
	}
	if late := time.Since(deadline); late > 3*time.Second {
		t.Errorf("the key was granted %v after the dead holder's deadline", late)
	}
	if fence <= held {
		t.Fatalf("fence %d after the dead holder's %d", fence, held)
	}
}

// open opens a handle on url, closed at the test's end.
func open(t *testing.T, url string, opts ...func(*postgres.Config)) *postgres.Driver {
	t.Helper()
	cfg := postgres.Config{URL: url}
	for _, o := range opts {
		o(&cfg)
	}
	d, err := postgres.Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

func itoa(n int) string { return strconv.Itoa(n) }
