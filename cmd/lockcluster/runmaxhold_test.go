//go:build unix

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers/redis/redistest"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// run --max-hold stops a command that would run for ever before its
// lock's cap on total hold time, however well the lock is refreshed: the
// command's group is gone before the cap, and before the next run waiting
// on the key starts its command; run says why and exits 76.
func TestRun_MaxHoldStopsTheCommandBeforeTheCap(t *testing.T) {
	needProc(t)
	const (
		ttl  = 6 * time.Second
		hold = 3 * time.Second
	)
	env := []string{"REDIS_URL=" + redistest.Start(t).URL()}
	args := []string{"run", "--driver", "redis", "--key", "k", "--ttl", ttl.String(), "--grace", "500ms"}
	o, firstCmd, nextCmd := newOverlap(t)
	before := time.Now()
	first := startProc(t, env, append(append(args, "--max-hold", hold.String(), "--"), firstCmd...)...)
	o.firstRuns(t)
	next := startProc(t, env, append(append(args, "--"), nextCmd...)...)
	poll.Until(t, 10*time.Second, "the next run to wait", func() bool { return strings.Contains(next.stderr.String(), "waiting") })

	o.check(t, before)
	if code := first.wait(t); code != exitLost {
		t.Fatalf("the capped run: exit %d, want %d; stderr:\n%s", code, exitLost, first.stderr)
	}
	if !strings.Contains(first.stderr.String(), "cap on total hold time") {
		t.Errorf("the capped run does not say the cap stopped its command:\n%s", first.stderr)
	}
	beats := nanos(o.beats)
	if last := time.Unix(0, beats[len(beats)-1]); last.After(before.Add(hold - ttl/6)) {
		t.Errorf("the command still ran %v after run started; its cap is %v, and SIGKILL is due a sixth of the TTL before it", last.Sub(before), hold)
	}
}

// run --max-hold refuses a cap within the margin the command is told
// before it (a fifth of the TTL), and a negative one, as bad flags.
func TestRun_MaxHoldFlagChecked(t *testing.T) {
	for _, tc := range []struct{ ttl, hold, says string }{
		{"10s", "2s", "a fifth of the TTL"},
		{"10s", "-1s", "must not be negative"},
	} {
		code, _, stderr := runCLI(t, nil, "run", "--driver", "sqlite", "--sqlite-path", t.TempDir()+"/l.db", "--key", "k",
			"--ttl", tc.ttl, "--max-hold", tc.hold, "--", "true")
		if code != exitUsage || !strings.Contains(stderr, "--max-hold") || !strings.Contains(stderr, tc.says) {
			t.Errorf("--ttl %s --max-hold %s: exit %d, want %d saying %q; stderr:\n%s", tc.ttl, tc.hold, code, exitUsage, tc.says, stderr)
		}
	}
}

// run --help names --max-hold and says that the command is stopped
// before the cap.
func TestRun_HelpSaysMaxHoldStopsTheCommand(t *testing.T) {
	_, stdout, _ := runCLI(t, nil, "run", "--help")
	for _, want := range []string{"--max-hold", "before the cap", "cap on total hold time"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("run --help does not say %q:\n%s", want, stdout)
		}
	}
}
