package main

import (
	"context"
	"github.com/zerotal/lock"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/internal/testkit/poll"
	"github.com/zerotal/lock/internal/testkit/syncbuf"
)

// runCLI runs the command line in-process with the given environment.
func runCLI(t *testing.T, vars map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	// Locked: raft's connection readers may still log after a node stopped.
	var out, errb syncbuf.Buffer
	e := &env{
		stdin: strings.NewReader(""), stdout: &out, stderr: &errb,
		getenv:  func(k string) string { return vars[k] },
		environ: []string{"PATH=" + os.Getenv("PATH")},
		self:    "lockcluster",
	}
	code = dispatch(t.Context(), e, args)
	return code, out.String(), errb.String()
}

// commandNames are the commands lockcluster has, besides help and
// completion.
var commandNames = []string{"agent", "dev", "status", "locks", "join", "leave", "token", "run", "elect", "leader", "bench", "version"}

func TestCLI_UsageAndHelp(t *testing.T) {
	if code, _, stderr := runCLI(t, nil); code != exitUsage || !strings.Contains(stderr, "Commands:") {
		t.Fatalf("no args: code %d, stderr %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, nil, "frobnicate"); code != exitUsage || !strings.Contains(stderr, "unknown command") {
		t.Fatalf("unknown command: code %d, stderr %q", code, stderr)
	}
	if code, stdout, _ := runCLI(t, nil, "help"); code != exitOK || !strings.Contains(stdout, "lockcluster run") {
		t.Fatalf("help: code %d, stdout %q", code, stdout)
	}
	if code, stdout, _ := runCLI(t, nil, "--help"); code != exitOK || !strings.Contains(stdout, "Commands:") {
		t.Fatalf("--help: code %d, stdout %q", code, stdout)
	}
	for _, name := range commandNames {
		code, stdout, _ := runCLI(t, nil, name, "--help")
		if code != exitOK || !strings.Contains(stdout, "Usage: lockcluster "+name) {
			t.Errorf("%s --help: code %d, stdout %q", name, code, stdout)
		}
		if name != "version" && !strings.Contains(stdout, "Examples:") {
			t.Errorf("%s --help has no examples:\n%s", name, stdout)
		}
		if code, stdout2, _ := runCLI(t, nil, "help", name); code != exitOK || stdout2 != stdout {
			t.Errorf("help %s: code %d, differs from %s --help", name, code, name)
		}
	}
	if code, _, stderr := runCLI(t, nil, "status", "--bogus"); code != exitUsage || !strings.Contains(stderr, "--help") {
		t.Fatalf("bad flag: code %d, stderr %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, nil, "locks", "extra"); code != exitUsage || !strings.Contains(stderr, `unexpected argument "extra"`) {
		t.Fatalf("stray argument: code %d, stderr %q", code, stderr)
	}
}

// --help lists only flags that do something: join and leave print one line,
// so they have no -o; run and bench say where the Redis URL comes from
// (it has no flag, to keep passwords out of the process list).
func TestCLI_HelpListsOnlyFlagsThatWork(t *testing.T) {
	for _, name := range []string{"join", "leave"} {
		_, stdout, _ := runCLI(t, nil, name, "--help")
		if strings.Contains(stdout, "--output") {
			t.Errorf("%s --help offers -o, which it ignores:\n%s", name, stdout)
		}
	}
	for _, name := range []string{"status", "locks"} {
		if _, stdout, _ := runCLI(t, nil, name, "--help"); !strings.Contains(stdout, "-o, --output") {
			t.Errorf("%s --help lacks -o:\n%s", name, stdout)
		}
	}
	for _, name := range []string{"run", "bench"} {
		if _, stdout, _ := runCLI(t, nil, name, "--help"); !strings.Contains(stdout, "REDIS_URL") {
			t.Errorf("%s --help does not say where the redis driver finds its URL:\n%s", name, stdout)
		}
	}
}

func TestCLI_AdminCommandsNeedAnAddress(t *testing.T) {
	for _, args := range [][]string{{"status"}, {"locks"}, {"join", "--id", "n4", "--raft-addr", "127.0.0.1:1", "--http-addr", "127.0.0.1:2"}, {"leave", "--id", "n4"}} {
		code, _, stderr := runCLI(t, nil, args...)
		if code != exitUsage || !strings.Contains(stderr, "--endpoints") || !strings.Contains(stderr, "LOCKCLUSTER_ENDPOINTS") {
			t.Errorf("%v: code %d, stderr %q", args, code, stderr)
		}
	}
}

func TestCLI_StatusOfAnUnreachableClusterIsUnavailable(t *testing.T) {
	code, stdout, stderr := runCLI(t, map[string]string{"LOCKCLUSTER_ENDPOINTS": "127.0.0.1:1"}, "status", "--timeout", "2s")
	if code != exitUnavailable || !strings.Contains(stdout, "unreachable") || !strings.Contains(stderr, "127.0.0.1:1: connection refused") {
		t.Fatalf("code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// sqliteArgs selects a fresh SQLite lock file: run refuses backends that
// no other process sees, such as the memory driver.
func sqliteArgs(t *testing.T) []string {
	t.Helper()
	return []string{"--driver", "sqlite", "--sqlite-path", filepath.Join(t.TempDir(), "locks.db")}
}

func TestRun_PassesFenceKeyAndExitStatus(t *testing.T) {
	args := append(append([]string{"run"}, sqliteArgs(t)...), "--key", "job", "--ttl", "5s", "--")
	code, stdout, stderr := runCLI(t, nil, append(args,
		"sh", "-c", `echo "key=$LOCK_KEY fence=$LOCK_FENCE owner=$LOCK_OWNER"; exit 7`)...)
	if code != 7 {
		t.Fatalf("exit %d, want the command's 7; stderr %q", code, stderr)
	}
	if !strings.Contains(stdout, "key=job fence=1 owner=") || strings.HasSuffix(strings.TrimSpace(stdout), "owner=") {
		t.Fatalf("command output %q lacks the key, fence and owner", stdout)
	}
}

// --owner names the grant's owner: the command gets it as LOCK_OWNER, and
// the backend records it, so the command can act for the holder.
func TestRun_OwnerIsGivenToTheCommand(t *testing.T) {
	args := append(append([]string{"run"}, sqliteArgs(t)...), "--key", "job", "--owner", "deploy-42", "--")
	code, stdout, stderr := runCLI(t, nil, append(args, "sh", "-c", `echo "owner=$LOCK_OWNER"`)...)
	if code != 0 || !strings.Contains(stdout, "owner=deploy-42") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want the command to see owner=deploy-42", code, stdout, stderr)
	}
}

func TestRun_ExitCodes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"success", []string{"--key", "k", "--", "true"}, 0},
		{"no key", []string{"--", "true"}, exitUsage},
		{"bad ttl", []string{"--key", "k", "--ttl", "0s", "--", "true"}, exitUsage},
		{"not found", []string{"--key", "k", "--", "/nonexistent/command"}, exitNotFound},
		{"killed by signal", []string{"--key", "k", "--", "sh", "-c", "kill -TERM $$"}, 128 + 15},
		{"unreachable cluster", []string{"--driver", "cluster", "--endpoints", "127.0.0.1:1", "--key", "k", "--", "true"}, exitUnavailable},
		{"bare number for --ttl", []string{"--key", "k", "--ttl", "30", "--", "true"}, exitUsage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{"run"}, sqliteArgs(t)...), tc.args...)
			code, _, stderr := runCLI(t, nil, args...)
			if code != tc.want {
				t.Fatalf("exit %d, want %d; stderr %q", code, tc.want, stderr)
			}
		})
	}
}

func TestRun_RefreshesPastTheTTL(t *testing.T) {
	// The default grace for this TTL is a third of it.
	args := append(append([]string{"run"}, sqliteArgs(t)...), "--key", "k", "--ttl", "900ms", "--")
	code, stdout, stderr := runCLI(t, nil, append(args, "sh", "-c", "sleep 2; echo finished")...)
	if code != 0 || !strings.Contains(stdout, "finished") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestRun_StopsTheCommandWhenCancelled(t *testing.T) {
	var out, errb syncbuf.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb,
		getenv: func(string) string { return "" }, environ: []string{"PATH=" + os.Getenv("PATH")}}
	ctx, cancel := context.WithCancel(t.Context())
	sqlite := sqliteArgs(t)
	done := make(chan int, 1)
	go func() {
		args := append(append([]string{"run"}, sqlite...), "--key", "k", "--grace", "5s", "--",
			"sh", "-c", `trap 'echo got-term; exit 9' TERM; echo ready; while :; do sleep 0.05; done`)
		done <- dispatch(ctx, e, args)
	}()
	poll.Until(t, 10*time.Second, `"ready" in the output`, func() bool { return strings.Contains(out.String(), "ready") })
	cancel()
	code := <-done
	if code != 9 {
		t.Fatalf("exit %d, want 9 from the command's TERM trap; stdout %q stderr %q", code, out.String(), errb.String())
	}
}

func TestBench_MemoryDriverShortRun(t *testing.T) {
	code, stdout, stderr := runCLI(t, nil, "bench", "--driver", "memory", "--workers", "4", "--keys", "1",
		"--duration", "300ms", "--warmup", "50ms")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{"cycles", "acquire   p50", "release   p50", "errors    0",
		"(client only: the memory driver runs in this process)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("bench output lacks %q:\n%s", want, stdout)
		}
	}
	if c := cpuPerCycle(t, stdout, "client"); c <= 0 {
		t.Errorf("cpu/cycle of the client %.1fµs, want it positive:\n%s", c, stdout)
	}
}

// cpuPerCycle returns the µs per cycle the cpu/cycle line of bench's
// output gives name ("total" for the total), or fails t.
func cpuPerCycle(t *testing.T, stdout, name string) float64 {
	t.Helper()
	var re *regexp.Regexp
	if name == "total" {
		re = regexp.MustCompile(`(?m)^cpu/cycle ([0-9.]+)µs total`)
	} else {
		re = regexp.MustCompile(`(?m)^cpu/cycle .*[:,] ` + regexp.QuoteMeta(name) + ` ([0-9.]+)µs`)
	}
	m := re.FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no cpu/cycle figure for %s in:\n%s", name, stdout)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// benchCycles returns the cycles bench counted.
func benchCycles(t *testing.T, stdout string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^cycles +([0-9]+) in `).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no cycles line in:\n%s", stdout)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// run takes its key as the first argument too (run KEY -- COMMAND, as
// etcdctl lock NAME COMMAND), with flags after the key; -w is --timeout;
// -n is consul's count of slots, and a value that is no number (flock's
// -n, no wait) points to --no-wait; help of no command is a usage error.
func TestCLI_RunKeyArgumentShorthandsAndHelp(t *testing.T) {
	args := append(append([]string{"run"}, sqliteArgs(t)...), "job", "-w", "1s", "--ttl", "5s", "--", "sh", "-c", `echo "key=$LOCK_KEY"`)
	if code, stdout, stderr := runCLI(t, nil, args...); code != 0 || !strings.Contains(stdout, "key=job") {
		t.Errorf("run KEY -w 1s -- CMD: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	args = append(append([]string{"run"}, sqliteArgs(t)...), "job", "sh", "-c", `echo "key=$LOCK_KEY"`)
	if code, stdout, stderr := runCLI(t, nil, args...); code != 0 || !strings.Contains(stdout, "key=job") {
		t.Errorf("run KEY CMD: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, stderr := runCLI(t, nil, "run", "-n", "job", "--", "true"); code != exitUsage || !strings.Contains(stderr, "--no-wait") {
		t.Errorf("run -n: exit %d, stderr %q; want a usage error that points to --no-wait", code, stderr)
	}
	if code, _, stderr := runCLI(t, nil, "help", "nosuch"); code != exitUsage || !strings.Contains(stderr, `unknown command "nosuch"`) {
		t.Errorf("help nosuch: exit %d, stderr %q; want %d", code, stderr, exitUsage)
	}
	if code, stdout, _ := runCLI(t, nil, "help", "run"); code != 0 || !strings.Contains(stdout, "run holds a lock") {
		t.Errorf("help run: exit %d, stdout %q", code, stdout)
	}
}

// Completion never offers a value the command refuses: run, elect and
// leader are offered no memory driver, and every value offered for -o is
// a format the reading commands print.
func TestCLI_CompletionOffersOnlyAcceptedValues(t *testing.T) {
	complete := func(args ...string) []string {
		_, stdout, _ := runCLI(t, nil, append([]string{"__complete"}, args...)...)
		var out []string
		for line := range strings.SplitSeq(strings.TrimSpace(stdout), "\n") {
			if line != "" && !strings.HasPrefix(line, ":") {
				out = append(out, line)
			}
		}
		return out
	}
	// run, elect and leader refuse a backend no other process sees.
	for _, cmd := range []string{"run", "elect", "leader"} {
		for _, d := range complete(cmd, "--driver", "") {
			if err := requireShared(lock.Config{Driver: d, SQLite: lock.SQLiteConfig{Path: "/var/lib/app/locks.db"}}); err != nil {
				t.Errorf("%s --driver completion offers %q, which %s refuses: %v", cmd, d, cmd, err)
			}
		}
	}
	for _, cmd := range []string{"status", "locks", "leader"} {
		for _, f := range complete(cmd, "-o", "") {
			if err := checkOutputFormat(f); err != nil {
				t.Errorf("%s -o completion offers %q, which it refuses: %v", cmd, f, err)
			}
		}
	}
	if roles := complete("token", "--role", ""); strings.Join(roles, ",") != "client,operator,metrics" {
		t.Errorf("token --role completion = %v", roles)
	}
}
