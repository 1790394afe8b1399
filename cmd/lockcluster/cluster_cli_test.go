//go:build unix

package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zerotal/lock/internal/loopback"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// These tests run lockcluster against a real agent process.

// startAgent starts a one-node cluster whose API wants token ("": none),
// with env added to its environment, and returns its HTTP address once it
// has a leader.
func startAgent(t *testing.T, token string, env ...string) string {
	t.Helper()
	skipShort(t, "starts an agent process")
	httpAddr, raftAddr := loopback.MustFreeAddr(t), loopback.MustFreeAddr(t)
	startProc(t, append([]string{"LOCKCLUSTER_TOKEN=" + token}, env...), "agent", "--id", "n1", "--data-dir", t.TempDir(),
		"--raft-addr", raftAddr, "--http-addr", httpAddr, "--bootstrap-self", "--log-level", "warn")
	vars := map[string]string{"LOCKCLUSTER_ENDPOINTS": httpAddr, "LOCKCLUSTER_TOKEN": token}
	var code int
	var stderr string
	if !poll.Wait(30*time.Second, func() bool {
		code, _, stderr = runCLI(t, vars, "status", "--timeout", "2s")
		return code == exitOK
	}) {
		t.Fatalf("the agent has no leader after 30s: exit %d, %s", code, stderr)
	}
	return httpAddr
}

// A cluster that refuses the token: every command says "authentication
// failed" once, names the flag and the variable, and exits 77; status
// shows the nodes as unauthorized, not unreachable.
func TestCLI_RefusedTokenIsAnAuthenticationFailure(t *testing.T) {
	addr := startAgent(t, "the-right-token-0123456789")
	const msg = "authentication failed (check --token / LOCKCLUSTER_TOKEN)"
	for _, tc := range []struct {
		name string
		env  []string
		args []string
	}{
		{"locks without a token", nil, []string{"locks"}},
		{"locks with a wrong token", []string{"LOCKCLUSTER_TOKEN=wrong"}, []string{"locks"}},
		{"status with a wrong token", nil, []string{"status", "--token", "wrong"}},
		{"join with a wrong token", []string{"LOCKCLUSTER_TOKEN=wrong"}, []string{"join", "--id", "n9", "--raft-addr", "127.0.0.1:1", "--http-addr", "127.0.0.1:2"}},
		{"run with a wrong token", []string{"LOCKCLUSTER_TOKEN=wrong"}, []string{"run", "--key", "k", "--", "echo", "ran"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runBinary(t, append(tc.env, "LOCKCLUSTER_ENDPOINTS="+addr), tc.args...)
			if code != exitNoPerm {
				t.Fatalf("exit %d, want %d; stderr %q", code, exitNoPerm, stderr)
			}
			if strings.Count(stderr, msg) != 1 || strings.Contains(stderr, "client:") || strings.Contains(stderr, "cluster:") {
				t.Errorf("stderr %q, want %q once and no layer prefixes", stderr, msg)
			}
			if strings.Contains(stdout, "ran") || strings.Contains(stdout, "unreachable") {
				t.Errorf("stdout %q", stdout)
			}
			if tc.args[0] == "status" && !strings.Contains(stdout, "unauthorized") {
				t.Errorf("status does not show the node as unauthorized:\n%s", stdout)
			}
		})
	}
	code, stdout, stderr := runBinary(t, []string{"LOCKCLUSTER_ENDPOINTS=" + addr, "LOCKCLUSTER_TOKEN=the-right-token-0123456789"}, "status")
	if code != exitOK || !strings.Contains(stdout, " leader ") {
		t.Fatalf("status with the token: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// leave of an id that is no member is an error (exit status 67) that
// names the members, not "removed"; a request the cluster refuses as
// invalid names the field without Go's type names.
func TestCLI_LeaveOfAnUnknownIDAndInvalidRequests(t *testing.T) {
	addr := startAgent(t, "")
	env := []string{"LOCKCLUSTER_ENDPOINTS=" + addr}
	code, stdout, stderr := runBinary(t, env, "leave", "--id", "nope")
	if code != exitNoMember || stdout != "" || !strings.Contains(stderr, `lockcluster leave: unknown member "nope": the members are n1`) {
		t.Fatalf("leave nope: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, _, stderr = runBinary(t, env, "join", "--id", "n9", "--raft-addr", "nonsense", "--http-addr", "127.0.0.1:2")
	if code != exitUsage || !strings.Contains(stderr, "lockcluster join: invalid addr: ") {
		t.Fatalf("join with a bad address: exit %d, stderr %q", code, stderr)
	}
	for _, goName := range []string{"Go ", "struct", "lock:", "client:", "cluster:"} {
		if strings.Contains(stderr, goName) {
			t.Errorf("stderr %q shows %q", stderr, goName)
		}
	}
}

// With no leader (two of three voters never started), the admin commands
// and run say "no leader", not the last connection refused, and exit 69.
func TestCLI_NoQuorumSaysNoLeader(t *testing.T) {
	skipShort(t, "starts an agent process")
	var addrs []string
	var peers []string
	for i := 1; i <= 3; i++ {
		h, r := loopback.MustFreeAddr(t), loopback.MustFreeAddr(t)
		addrs = append(addrs, h)
		peers = append(peers, "n"+string(rune('0'+i))+"="+r+"="+h)
	}
	n1 := strings.Split(peers[0], "=")
	startProc(t, nil, "agent", "--id", "n1", "--data-dir", t.TempDir(), "--raft-addr", n1[1], "--http-addr", n1[2],
		"--bootstrap", strings.Join(peers, ","), "--log-level", "off")
	env := []string{"LOCKCLUSTER_ENDPOINTS=" + strings.Join(addrs, ",")}
	// Wait until n1 answers (as a candidate).
	poll.Until(t, 10*time.Second, "status to list n1", func() bool {
		_, stdout, _ := runCLI(t, map[string]string{"LOCKCLUSTER_ENDPOINTS": addrs[0]}, "status", "--timeout", "1s")
		return strings.Contains(stdout, "n1")
	})
	for _, args := range [][]string{
		{"locks", "--timeout", "2s"},
		{"status", "--timeout", "2s"},
		{"run", "--key", "k", "--timeout", "1s", "--", "echo", "ran"},
	} {
		code, stdout, stderr := runBinary(t, env, args...)
		if code != exitUnavailable || !strings.Contains(stderr, "no leader (election in progress or no quorum)") {
			t.Errorf("%v: exit %d, stderr %q; want %d and no leader", args, code, stderr, exitUnavailable)
		}
		if strings.Contains(stdout, "ran") {
			t.Errorf("%v: the command ran", args)
		}
	}
}

// dev, as "make run" starts it: nothing on stderr before the banner (raft
// warns of its first election), a banner that says how to run this very
// program, and on Ctrl-C a clean stop with exit status 0 (make prints no
// error).
func TestDev_InterruptIsAQuietCleanStop(t *testing.T) {
	skipShort(t, "starts a three-node cluster")
	var p *proc
	for range 3 {
		p = startProc(t, nil, "dev", "--base-port", "0", "--data-dir", t.TempDir())
		poll.Until(t, 10*time.Second, "the cluster to start or exit", func() bool {
			return p.exited() || strings.Contains(p.stdout.String(), "Ctrl-C stops all three nodes.")
		})
		// A free port picked by --base-port 0 can be taken by another
		// process before the node binds it; pick again.
		if !p.exited() || !strings.Contains(p.stderr.String(), "address already in use") {
			break
		}
	}
	if p.exited() {
		t.Fatalf("dev exited with %d before its banner", p.code)
	}
	banner, before := p.stdout.String(), p.stderr.String()
	if before != "" {
		t.Errorf("dev printed on stderr before the banner:\n%s", before)
	}
	if !strings.Contains(banner, "export LOCKCLUSTER_ENDPOINTS=127.0.0.1:") || !strings.Contains(banner, " status\n") {
		t.Errorf("banner:\n%s", banner)
	}
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != exitOK {
		t.Fatalf("exit %d after SIGINT, want 0", code)
	}
	if !strings.HasSuffix(p.stdout.String(), "stopping the three nodes...\n") {
		t.Errorf("stdout does not end with the stop:\n%s", p.stdout)
	}
	if strings.Contains(p.stderr.String(), "[ERROR]") || strings.Contains(p.stderr.String(), "shutdown") {
		t.Errorf("stderr after SIGINT:\n%s", p.stderr)
	}
}

// agent --raft-advertise: the node listens on --raft-addr and publishes
// the advertised address in the raft configuration; an all-interfaces
// --raft-addr without it is refused with a message naming the flag.
func TestAgent_RaftAdvertise(t *testing.T) {
	skipShort(t, "starts an agent process")
	code, _, stderr := runBinary(t, nil, "agent", "--id", "n1", "--data-dir", t.TempDir(),
		"--raft-addr", "0.0.0.0:"+strings.Split(loopback.MustFreeAddr(t), ":")[1], "--raft-insecure",
		"--http-addr", loopback.MustFreeAddr(t))
	if code != exitUsage || !strings.Contains(strings.ToLower(stderr), "advertise") {
		t.Errorf("all-interfaces --raft-addr without --raft-advertise: exit %d, stderr %q; want %d naming the advertise setting", code, stderr, exitUsage)
	}

	httpAddr, raftAddr, advertised := loopback.MustFreeAddr(t), loopback.MustFreeAddr(t), loopback.MustFreeAddr(t)
	startProc(t, nil, "agent", "--id", "n1", "--data-dir", t.TempDir(), "--raft-addr", raftAddr,
		"--raft-advertise", advertised, "--http-addr", httpAddr, "--bootstrap-self", "--log-level", "off")
	vars := map[string]string{"LOCKCLUSTER_ENDPOINTS": httpAddr}
	var stdout string
	poll.Until(t, 10*time.Second, "status to succeed", func() bool {
		var code int
		code, stdout, _ = runCLI(t, vars, "status", "-o", "json", "--timeout", "2s")
		return code == exitOK
	})
	if !strings.Contains(stdout, advertised) || strings.Contains(stdout, raftAddr) {
		t.Fatalf("status shows %s; want the advertised raft address %s, not the bound %s", stdout, advertised, raftAddr)
	}
}

// --pprof serves Go's profiler on the API port, behind the token.
func TestAgent_PprofBehindTheToken(t *testing.T) {
	const token = "the-right-token-0123456789"
	addr := startAgent(t, token, "LOCKCLUSTER_PPROF=true")
	get := func(auth string) (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+"/debug/pprof/cmdline", nil)
		if err != nil {
			t.Fatal(err)
		}
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get(""); code != http.StatusUnauthorized {
		t.Fatalf("pprof without the token: %d, want 401", code)
	}
	if code, body := get(token); code != http.StatusOK || !strings.Contains(body, "agent") {
		t.Fatalf("pprof with the token: %d %q, want 200 and the command line", code, body)
	}
}

// locks -o json prints the HTTP API's schema (GET /v1/locks): the same
// field names and milliseconds, not Go's field names and nanoseconds.
func TestCLI_LocksJSONIsTheAPISchema(t *testing.T) {
	addr := startAgent(t, "")
	vars := map[string]string{"LOCKCLUSTER_ENDPOINTS": addr}
	// run without a command holds the lock until the test's end stops it.
	startProc(t, []string{"LOCKCLUSTER_ENDPOINTS=" + addr}, "run", "--driver", "cluster", "--key", "deploy", "--ttl", "1m")
	var stdout string
	poll.Until(t, 10*time.Second, "the lock to be held", func() bool {
		_, stdout, _ = runCLI(t, vars, "locks", "-o", "json")
		return strings.Contains(stdout, `"deploy"`)
	})
	var list struct {
		Locks []map[string]any `json:"locks"`
	}
	if err := json.Unmarshal([]byte(stdout), &list); err != nil || len(list.Locks) != 1 {
		t.Fatalf("locks -o json = %q (%v)", stdout, err)
	}
	for _, field := range []string{"key", "owner", "fence", "remaining_ms", "waiters"} {
		if _, ok := list.Locks[0][field]; !ok {
			t.Errorf("locks -o json lacks %q: %s", field, stdout)
		}
	}
	if ms, _ := list.Locks[0]["remaining_ms"].(float64); ms <= 0 || ms > 60000 {
		t.Errorf("remaining_ms %v; want milliseconds of a 1m lease", list.Locks[0]["remaining_ms"])
	}
	if code, _, stderr := runCLI(t, vars, "locks", "-o", "yaml"); code != exitUsage || !strings.Contains(stderr, "table and json") {
		t.Errorf("locks -o yaml: exit %d, stderr %q", code, stderr)
	}
}
