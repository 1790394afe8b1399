package main

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zerotal/lock/cmd/lockcluster/internal/cliflags"
	"github.com/zerotal/lock/internal/testkit/poll"
)

func TestDev_DemoRunsAgainstThreeNodes(t *testing.T) {
	skipShort(t, "starts a three-node cluster")
	var code int
	var stdout, stderr string
	for range 3 {
		code, stdout, stderr = runCLI(t, nil, "dev", "--base-port", "0", "--data-dir", t.TempDir(), "--exit-after-demo", "--log-level", "error")
		// A free port picked by --base-port 0 can be taken by another
		// process before the node binds it; pick again.
		if !strings.Contains(stderr, "address already in use") {
			break
		}
	}
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"export LOCKCLUSTER_ENDPOINTS=127.0.0.1:", "lockcluster status", "leader", "curl", "demo done"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestParsePeers(t *testing.T) {
	peers, err := parsePeers("n1=127.0.0.1:7101=127.0.0.1:7001, n2=127.0.0.1:7102")
	if err != nil || len(peers) != 2 || peers[0].HTTPAddr != "127.0.0.1:7001" || peers[1].RaftAddr != "127.0.0.1:7102" || peers[1].HTTPAddr != "" {
		t.Fatalf("parsePeers = %+v, %v", peers, err)
	}
	for _, bad := range []string{"n1", "=127.0.0.1:1", "n1=a=b=c", "n1="} {
		if _, err := parsePeers(bad); err == nil {
			t.Errorf("parsePeers(%q) accepted", bad)
		}
	}
	if peers, err := parsePeers(""); err != nil || len(peers) != 0 {
		t.Fatalf("empty = %+v, %v", peers, err)
	}
}

func TestAgent_RejectsInconsistentConfig(t *testing.T) {
	code, _, stderr := runCLI(t, nil, "agent", "--id", "n1", "--data-dir", t.TempDir(),
		"--raft-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0",
		"--bootstrap", "n2=127.0.0.1:7102=127.0.0.1:7002", "--log-level", "off")
	if code != exitUsage || !strings.Contains(stderr, "do not include this node") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runCLI(t, map[string]string{"LOCKCLUSTER_ID": "n1"}, "agent", "--data-dir", t.TempDir(), "--log-level", "loud")
	if code != exitUsage || !strings.Contains(stderr, "log level") {
		t.Fatalf("bad log level: exit %d, stderr %q", code, stderr)
	}
}

// Every flag can also come from the environment, and agent --help names
// the variable under each flag; a malformed variable is a usage error that
// names it.
func TestAgent_EveryFlagHasAnEnvironmentVariable(t *testing.T) {
	code, stdout, _ := runCLI(t, nil, "agent", "--help")
	if code != exitOK {
		t.Fatalf("agent --help: exit %d", code)
	}
	flags := helpFlags(stdout)
	for name, block := range flags {
		if name == "help" {
			continue
		}
		if v := cliflags.EnvName(name); !strings.Contains(block, "env "+v) {
			t.Errorf("agent --help names no environment variable for --%s (want %s):\n%s", name, v, block)
		}
	}
	if len(flags) < 10 {
		t.Fatalf("found only %d flags in agent --help:\n%s", len(flags), stdout)
	}
	for v, val := range map[string]string{
		"LOCKCLUSTER_MAX_KEYS":         "many",
		"LOCKCLUSTER_MAX_WAITERS":      "1.5",
		"LOCKCLUSTER_SHUTDOWN_TIMEOUT": "soon",
	} {
		code, _, stderr := runCLI(t, map[string]string{v: val}, "agent", "--id", "n1", "--data-dir", t.TempDir(), "--log-level", "off")
		if code != exitUsage || !strings.Contains(stderr, v) {
			t.Errorf("%s=%q: exit %d, stderr %q", v, val, code, stderr)
		}
	}
	code, _, stderr := runCLI(t, nil, "agent", "--id", "n1", "--data-dir", t.TempDir(), "--log-level", "off", "--election-timeout", "-1s")
	if code != exitUsage || !strings.Contains(stderr, "election-timeout") {
		t.Errorf("negative --election-timeout: exit %d, stderr %q", code, stderr)
	}
}

// helpFlags maps each flag that a --help output lists to its lines.
func helpFlags(help string) map[string]string {
	flags := map[string]string{}
	name := ""
	_, section, _ := strings.Cut(help, "\nFlags:\n")
	section, _, _ = strings.Cut(section, "\n\n")
	for _, line := range strings.Split(section, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case strings.HasPrefix(trimmed, "--") || strings.HasPrefix(trimmed, "-h, --"):
			f := trimmed[strings.Index(trimmed, "--")+2:]
			name, _, _ = strings.Cut(f, " ")
			flags[name] = line
		case name != "" && strings.HasPrefix(line, "        "):
			flags[name] += "\n" + line
		default:
			name = ""
		}
	}
	return flags
}

// An ordinary start and stop of a three-node cluster logs nothing at
// ERROR (raft's transport reports the connections a stopping node closes
// itself), and each node says "node started" once.
func TestDev_OrdinaryStopLogsNoError(t *testing.T) {
	skipShort(t, "starts a three-node cluster")
	for round := range 1 {
		dir := t.TempDir()
		var p *proc
		for range 3 { // a port picked free may be taken meanwhile: pick again
			p = startProc(t, nil, "dev", "--base-port", "0", "--data-dir", dir, "--log-level", "info")
			if !poll.Wait(30*time.Second, func() bool {
				return strings.Contains(p.stdout.String(), "Ctrl-C stops") || strings.Contains(p.stderr.String(), "address already in use")
			}) {
				t.Fatalf("round %d: the cluster did not start:\n%s\n%s", round, p.stdout, p.stderr)
			}
			if !strings.Contains(p.stderr.String(), "address already in use") {
				break
			}
			p.wait(t)
		}
		// Let the followers' raft connections come up before the stop.
		poll.Until(t, 10*time.Second, "a heartbeat round", func() bool {
			return strings.Count(p.stderr.String()+p.stdout.String(), "node started") >= 3
		})
		if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		if code := p.wait(t); code != exitOK {
			t.Fatalf("round %d: exit %d:\n%s", round, code, p.stderr)
		}
		logs := p.stderr.String() + p.stdout.String()
		for line := range strings.SplitSeq(logs, "\n") {
			if strings.Contains(line, "level=ERROR") {
				t.Errorf("round %d: an ordinary stop logged an error: %s", round, line)
			}
		}
		if n := strings.Count(logs, `msg="node started"`); n != 3 {
			t.Errorf("round %d: %d \"node started\" lines for three nodes", round, n)
		}
	}
}
