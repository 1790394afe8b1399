package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/zerotal/lock/cmd/lockcluster/internal/cliflags"
	"github.com/zerotal/lock/internal/buildinfo"
)

// These tests run the lockcluster binary (this test binary running main)
// and check the conventions of its command line.

// A mistyped command is a usage error that suggests the nearest ones.
func TestCLI_SuggestsTheNearestCommand(t *testing.T) {
	for typed, want := range map[string]string{
		"stauts": "did you mean status?",
		"lcoks":  "did you mean locks?",
		"agnet":  "did you mean agent?",
	} {
		code, stdout, stderr := runBinary(t, nil, typed)
		if code != exitUsage || stdout != "" {
			t.Errorf("%s: exit %d, stdout %q; want %d and nothing on stdout", typed, code, stdout, exitUsage)
		}
		if !strings.Contains(stderr, `unknown command "`+typed+`"`) || !strings.Contains(stderr, want) {
			t.Errorf("%s: stderr %q, want the unknown command and %q", typed, stderr, want)
		}
	}
	if _, _, stderr := runBinary(t, nil, "xyzzy"); strings.Contains(stderr, "did you mean") {
		t.Errorf("xyzzy: suggests something unrelated: %q", stderr)
	}
}

// --version prints the build's version on one line; "version" adds the
// commit and the Go version.
func TestCLI_Version(t *testing.T) {
	code, stdout, _ := runBinary(t, nil, "--version")
	if want := "lockcluster " + buildinfo.Version() + "\n"; code != exitOK || stdout != want {
		t.Fatalf("--version: exit %d, stdout %q, want %q", code, stdout, want)
	}
	code, stdout, _ = runBinary(t, nil, "version")
	i := buildinfo.Get()
	if code != exitOK || !strings.HasPrefix(stdout, "lockcluster "+i.Version+"\n") ||
		!strings.Contains(stdout, "revision") || !strings.Contains(stdout, "go version  "+i.GoVersion) {
		t.Fatalf("version: exit %d, stdout %q", code, stdout)
	}
}

// The environment carries settings, not one command's behaviour: the
// client commands read their connection settings from it, and --help
// names the variable (with the deprecated one where there was one); every
// other flag of theirs is read from the command line only, and its help
// names no variable (LOCKCLUSTER_TIMEOUT=0 must not mean "do not wait" to
// run and "fail at once" to status). agent and dev read every flag. The
// flags that name a node to act on say why they are not read.
func TestCLI_HelpNamesTheVariableOfEveryFlag(t *testing.T) {
	for _, name := range commandNames {
		code, stdout, _ := runCLI(t, nil, name, "--help")
		if code != exitOK {
			t.Fatalf("%s --help: exit %d", name, code)
		}
		for flag, block := range helpFlags(stdout) {
			switch {
			case flag == "help":
			case (name == "join" || name == "leave") && (flag == "id" || flag == "raft-addr" || flag == "http-addr"),
				name == "token" && (flag == "name" || flag == "role" || flag == "prefixes" || flag == "token-file"):
				if !strings.Contains(block, "not read from the environment") || strings.Contains(block, "env LOCKCLUSTER_") {
					t.Errorf("%s --%s: the help does not say it is not read from the environment:\n%s", name, flag, block)
				}
			case name != "agent" && name != "dev" && (!cliflags.ConnectionFlags[flag] || (name == "locks" && flag == "prefix")):
				if strings.Contains(block, "env LOCKCLUSTER_") {
					t.Errorf("%s --%s: read from the environment, but it shapes what the command does:\n%s", name, flag, block)
				}
			case !strings.Contains(block, "env "+cliflags.EnvName(flag)):
				t.Errorf("%s --%s: the help does not name %s:\n%s", name, flag, cliflags.EnvName(flag), block)
			}
		}
	}
	for _, name := range []string{"status", "run", "agent"} {
		_, stdout, _ := runCLI(t, nil, name, "--help")
		if strings.Contains(stdout, "deprecated") || strings.Contains(stdout, "LOCK_CLUSTER") {
			t.Errorf("%s --help names a variable outside the LOCKCLUSTER_ family:\n%s", name, stdout)
		}
	}
}

// One family of variables sets every flag: LOCKCLUSTER_<FLAG>; a name
// outside it (LOCK_CLUSTER_ADDRS) sets nothing, and the flag wins over the
// variable.
func TestCLI_EnvironmentFamily(t *testing.T) {
	// status lists every address it was given, each unreachable here.
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string // the address status lists
	}{
		{"LOCKCLUSTER_ENDPOINTS", []string{"LOCKCLUSTER_ENDPOINTS=127.0.0.1:1"}, nil, "127.0.0.1:1"},
		{"only the family is read", []string{"LOCKCLUSTER_ENDPOINTS=127.0.0.1:1", "LOCK_CLUSTER_ADDRS=127.0.0.1:2"}, nil, "127.0.0.1:1"},
		{"flag wins", []string{"LOCKCLUSTER_ENDPOINTS=127.0.0.1:1"}, []string{"--endpoints", "127.0.0.1:3"}, "127.0.0.1:3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runBinary(t, append(tc.env, "LOCKCLUSTER_TIMEOUT=2s"), append([]string{"status"}, tc.args...)...)
			if code != exitUnavailable || !strings.Contains(stdout, tc.want+" ") {
				t.Fatalf("exit %d, want %d and a row for %s; stdout %q stderr %q", code, exitUnavailable, tc.want, stdout, stderr)
			}
			for _, other := range []string{"127.0.0.1:1 ", "127.0.0.1:2 ", "127.0.0.1:3 "} {
				if other != tc.want+" " && strings.Contains(stdout, other) {
					t.Errorf("status also asked %s:\n%s", other, stdout)
				}
			}
		})
	}
	// A value a flag refuses is a usage error naming the variable.
	code, _, stderr := runBinary(t, []string{"LOCKCLUSTER_MAX_KEYS=lots"}, "agent")
	if code != exitUsage || !strings.Contains(stderr, `LOCKCLUSTER_MAX_KEYS: "lots" is not an integer`) {
		t.Errorf("agent with LOCKCLUSTER_MAX_KEYS=lots: exit %d, stderr %q", code, stderr)
	}
	// What one command does is not read from the environment: neither a
	// timeout nor the output format reaches status.
	code, stdout, stderr := runBinary(t, []string{"LOCKCLUSTER_ENDPOINTS=127.0.0.1:1", "LOCKCLUSTER_TIMEOUT=0", "LOCKCLUSTER_JSON=true"}, "status")
	if code != exitUnavailable || strings.HasPrefix(stdout, "[") || !strings.Contains(stdout, "unreachable") {
		t.Errorf("status with LOCKCLUSTER_TIMEOUT=0 and LOCKCLUSTER_JSON=true: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	// join and leave never take the node to act on from the environment:
	// LOCKCLUSTER_ID configures an agent.
	code, _, stderr = runBinary(t, []string{"LOCKCLUSTER_ENDPOINTS=127.0.0.1:1", "LOCKCLUSTER_ID=n1"}, "leave")
	if code != exitUsage || !strings.Contains(stderr, "--id is required") {
		t.Errorf("leave with LOCKCLUSTER_ID set: exit %d, stderr %q", code, stderr)
	}
}

// --endpoints is the one name of the node addresses on every command;
// --flag=value works as well as --flag value, and --addr is no flag.
func TestCLI_Endpoints(t *testing.T) {
	for _, args := range [][]string{
		{"status", "--endpoints", "127.0.0.1:1"},
		{"status", "--endpoints=127.0.0.1:1"},
		{"status", "-endpoints", "127.0.0.1:1"}, // Go's single-dash form
		{"status", "-endpoints=127.0.0.1:1"},
	} {
		code, stdout, stderr := runBinary(t, []string{"LOCKCLUSTER_TIMEOUT=2s"}, args...)
		if code != exitUnavailable || !strings.Contains(stdout+stderr, "127.0.0.1:1") {
			t.Errorf("%v: exit %d, want %d naming 127.0.0.1:1; stdout %q stderr %q", args, code, exitUnavailable, stdout, stderr)
		}
	}
	// (A cluster that cannot be reached takes the client's whole time
	// budget, 10s: one run is enough.)
	args := []string{"run", "--driver", "cluster", "--endpoints", "127.0.0.1:1", "--key", "k", "--no-wait", "--", "true"}
	code, _, stderr := runBinary(t, nil, args...)
	if code != exitUnavailable || !strings.Contains(stderr, "127.0.0.1:1: connection refused") {
		t.Errorf("%v: exit %d, want %d; stderr %q", args, code, exitUnavailable, stderr)
	}
	for _, args := range [][]string{{"status", "--addr", "127.0.0.1:1"}, {"run", "--addrs", "127.0.0.1:1", "--key", "k", "--", "true"}} {
		code, _, stderr := runBinary(t, nil, args...)
		if code != exitUsage || !strings.Contains(stderr, "unknown flag") {
			t.Errorf("%v: exit %d, want %d for an unknown flag; stderr %q", args, code, exitUsage, stderr)
		}
	}
	for _, name := range []string{"status", "locks", "join", "leave", "run", "bench"} {
		_, stdout, _ := runCLI(t, nil, name, "--help")
		if !strings.Contains(stdout, "--endpoints") || strings.Contains(stdout, "--addr ") || strings.Contains(stdout, "--addrs") {
			t.Errorf("%s --help: want --endpoints and neither --addr nor --addrs:\n%s", name, stdout)
		}
	}
}

// Rewriting the single-dash form stops where the command's own arguments
// begin: they reach the command as they are.
func TestCLI_SingleDashFormLeavesTheCommandAlone(t *testing.T) {
	db := sqliteArgs(t)
	code, stdout, stderr := runBinary(t, nil, append(append([]string{"run", "-key", "k", "-ttl", "5s"}, db...),
		"echo", "-key", "-ttl")...)
	if code != exitOK || stdout != "-key -ttl\n" {
		t.Fatalf("exit %d, stdout %q (want the command's arguments untouched), stderr %q", code, stdout, stderr)
	}
}

// Durations take days, and a bare number is refused with the units to
// write.
func TestCLI_Durations(t *testing.T) {
	db := sqliteArgs(t)
	for _, ttl := range []string{"7d", "1d12h", "90m", "1.5d"} {
		code, _, stderr := runBinary(t, nil, append(append([]string{"run", "--key", "k", "--no-wait", "--ttl", ttl}, db...), "--", "true")...)
		if code != exitOK {
			t.Errorf("--ttl %s: exit %d, stderr %q", ttl, code, stderr)
		}
	}
	code, stdout, stderr := runBinary(t, nil, append(append([]string{"run", "--key", "k", "--ttl", "30"}, db...), "--", "echo", "ran")...)
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, "--ttl: 30 has no unit; write 30s, 5m, 2h or 1d") {
		t.Errorf("--ttl 30: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, _, stderr = runBinary(t, nil, "locks", "--endpoints", "127.0.0.1:1", "--timeout", "soon")
	if code != exitUsage || !strings.Contains(stderr, `--timeout: "soon" is not a duration; write 30s, 5m, 2h or 1d`) {
		t.Errorf("--timeout soon: exit %d, stderr %q", code, stderr)
	}
}

// The shells' completion: a script per shell, and flag values completed.
func TestCLI_Completion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		code, stdout, stderr := runCLI(t, nil, "completion", shell)
		if code != exitOK || !strings.Contains(stdout, "lockcluster") {
			t.Errorf("completion %s: exit %d, stderr %q, %d bytes", shell, code, stderr, len(stdout))
		}
	}
	code, stdout, _ := runCLI(t, nil, "__complete", "bench", "--driver", "")
	if code != exitOK || !strings.Contains(stdout, "cluster\nsqlite\nredis\npostgres\nmemory\n") {
		t.Errorf("completing --driver: exit %d, %q", code, stdout)
	}
	code, stdout, _ = runCLI(t, nil, "__complete", "st")
	if code != exitOK || !strings.Contains(stdout, "status") {
		t.Errorf("completing st: exit %d, %q", code, stdout)
	}
}

// docs/CLI.md cannot drift from the commands: every flag of every command
// (as its --help lists it) is named there, and every command has its
// section.
func TestCLI_DocsNameEveryFlag(t *testing.T) {
	b, err := os.ReadFile("../../docs/CLI.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, name := range commandNames {
		code, stdout, _ := runCLI(t, nil, name, "--help")
		if code != exitOK {
			t.Fatalf("%s --help: exit %d", name, code)
		}
		if name != "version" && !strings.Contains(doc, "## "+name) && !strings.Contains(doc, ", "+name) && !strings.Contains(doc, name+", ") {
			t.Errorf("docs/CLI.md has no section for %s", name)
		}
		for flag := range helpFlags(stdout) {
			if flag != "help" && !regexp.MustCompile(`--`+regexp.QuoteMeta(flag)+`([^a-z0-9-]|$)`).MatchString(doc) {
				t.Errorf("docs/CLI.md does not name %s --%s", name, flag)
			}
		}
	}
}
