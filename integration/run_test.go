package integration

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/internal/testkit/poll"
	"github.com/zerotal/lock/internal/testkit/syncbuf"
)

// lockRun runs "lockcluster run" against c and returns its exit status and
// output.
func lockRun(t *testing.T, ctx context.Context, c *testCluster, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, binary, append([]string{"run", "--driver", "cluster", "--endpoints", strings.Join(c.addrs(), ",")}, args...)...)
	var stdout, stderr syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = os.Environ()
	code := exitCode(cmd.Run())
	if code < 0 {
		t.Fatal("lockcluster run did not start")
	}
	return code, stdout.String(), stderr.String()
}

// TestRun_EndToEnd drives "lockcluster run" against real nodes: exit
// status and environment, the not-acquired exit code, waiting for a
// release, and a lost lock stopping the command.
func TestRun_EndToEnd(t *testing.T) {
	c := newCluster(t)
	cl := c.client()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	t.Run("status and environment", func(t *testing.T) {
		code, stdout, stderr := lockRun(t, ctx, c, "--key", "job", "--ttl", "5s", "--",
			"sh", "-c", `echo "key=$LOCK_KEY fence=$LOCK_FENCE"; exit 3`)
		if code != 3 {
			t.Fatalf("exit %d, want 3; stderr %q", code, stderr)
		}
		var fence uint64
		for _, f := range strings.Fields(stdout) {
			if v, ok := strings.CutPrefix(f, "fence="); ok {
				fence, _ = strconv.ParseUint(v, 10, 64)
			}
		}
		if !strings.Contains(stdout, "key=job ") || fence == 0 {
			t.Fatalf("command output %q: want key=job and a fence > 0", stdout)
		}
		if _, found, err := cl.Get(ctx, "job"); err != nil || found {
			t.Fatalf("lock still held after run: found=%v err=%v", found, err)
		}
	})

	t.Run("not acquired", func(t *testing.T) {
		if _, ok, err := driverstest.Take(ctx, cl, "busy", "someone-else", time.Minute); err != nil || !ok {
			t.Fatalf("setup: %v %v", ok, err)
		}
		code, stdout, stderr := lockRun(t, ctx, c, "--key", "busy", "--ttl", "5s", "--no-wait", "--", "echo", "ran")
		if code != 75 {
			t.Fatalf("exit %d, want 75; stderr %q", code, stderr)
		}
		// The cluster tells who holds it (an owner the application chose
		// names itself) and how long the holder has left.
		if !strings.Contains(stderr, `"busy" is held by another owner (someone-else); did not wait (--no-wait); the holder's lease ends in `) {
			t.Errorf("stderr %q does not say who holds the key for how long", stderr)
		}
		if strings.Contains(stdout, "ran") {
			t.Fatal("the command ran without the lock")
		}
	})

	t.Run("waits for a release", func(t *testing.T) {
		if _, ok, err := driverstest.Take(ctx, cl, "queue", "first", time.Minute); err != nil || !ok {
			t.Fatalf("setup: %v %v", ok, err)
		}
		type result struct {
			code           int
			stdout, stderr string
		}
		done := make(chan result, 1)
		go func() {
			code, stdout, stderr := lockRun(t, ctx, c, "--key", "queue", "--ttl", "5s", "--timeout", "30s", "--", "echo", "second")
			done <- result{code, stdout, stderr}
		}()
		// Release once the run is queued behind the holder.
		var info api.Lock
		var found bool
		var err error
		if !poll.Wait(20*time.Second, func() bool {
			info, found, err = cl.Get(ctx, "queue")
			return err == nil && found && info.Waiters > 0
		}) {
			t.Fatalf("run never queued: %+v found=%v err=%v", info, found, err)
		}
		if rel, err := cl.Release(ctx, "queue", "first"); err != nil || !rel {
			t.Fatalf("release: %v %v", rel, err)
		}
		r := <-done
		if r.code != 0 || !strings.Contains(r.stdout, "second") {
			t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
		}
	})

	t.Run("lost lock stops the command", func(t *testing.T) {
		type result struct {
			code   int
			stderr string
			took   time.Duration
		}
		done := make(chan result, 1)
		start := time.Now()
		go func() {
			code, _, stderr := lockRun(t, ctx, c, "--key", "doomed", "--ttl", "3s", "--grace", "1s", "--", "sleep", "60")
			done <- result{code, stderr, time.Since(start)}
		}()
		if !poll.Wait(20*time.Second, func() bool {
			_, found, err := cl.Get(ctx, "doomed")
			return err == nil && found
		}) {
			t.Fatal("run never took the lock")
		}
		// Force-releasing another owner's lock is an operator's right.
		if err := c.clientWith(operatorToken).ForceRelease(ctx, "doomed"); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-done:
			if r.code != 76 {
				t.Fatalf("exit %d, want 76; stderr %q", r.code, r.stderr)
			}
			if r.took > 20*time.Second {
				t.Fatalf("the command was stopped only after %v", r.took)
			}
		case <-time.After(40 * time.Second):
			t.Fatal("run did not stop after losing its lock")
		}
	})
}
