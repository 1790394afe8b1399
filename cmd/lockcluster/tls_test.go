package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zerotal/lock/internal/loopback"
	"github.com/zerotal/lock/internal/testkit/poll"
	"github.com/zerotal/lock/internal/testkit/syncbuf"
	"github.com/zerotal/lock/internal/testkit/testtls"
)

// agentProc is a lockcluster agent child process.
type agentProc struct {
	cmd  *exec.Cmd
	out  *syncbuf.Buffer // stdout and stderr
	done chan struct{}   // closed when it has exited
}

// startAgentProcess runs "lockcluster agent args..." as a child process
// (this test binary, running main); the test's end stops it.
func startAgentProcess(t *testing.T, env []string, args ...string) *agentProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, append([]string{"agent"}, args...)...)
	cmd.Env = append(baseEnv([]string{"agent"}), env...)
	out := &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		// Stop the process this test started, by its PID, and wait for it.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("agent output:\n%s", out.String())
		}
	})
	return &agentProc{cmd: cmd, out: out, done: done}
}

// A real agent process with TLS flags (mutual TLS, a cluster ID, a token
// from the environment) serves the client commands that bring the CA and a
// client certificate, and refuses those that do not, with a clear message.
func TestAgent_TLSProcess(t *testing.T) {
	skipShort(t, "starts an agent process")
	ca := testtls.NewCA(t, "cluster")
	node := ca.Issue(t, "n1")
	app := ca.Issue(t, "app")
	httpAddr, raftAddr, dataDir := loopback.MustFreeAddr(t), loopback.MustFreeAddr(t), t.TempDir()
	token := "agent-tls-token-0123456789"
	agent := startAgentProcess(t, []string{"LOCKCLUSTER_TOKEN=" + token, "LOCKCLUSTER_TLS_CLIENT_AUTH=true"},
		"--id", "n1", "--data-dir", dataDir, "--raft-addr", raftAddr, "--http-addr", httpAddr, "--bootstrap-self",
		"--cluster-id", "prod-locks", "--tls-cert", node.CertFile, "--tls-key", node.KeyFile, "--tls-ca", ca.File,
		"--log-level", "warn")

	vars := map[string]string{
		"LOCKCLUSTER_ENDPOINTS": httpAddr, "LOCKCLUSTER_TOKEN": token,
		"LOCKCLUSTER_TLS_CA": ca.File, "LOCKCLUSTER_TLS_CERT": app.CertFile, "LOCKCLUSTER_TLS_KEY": app.KeyFile,
	}
	var code int
	var stdout, stderr string
	poll.Wait(20*time.Second, func() bool {
		code, stdout, stderr = runCLI(t, vars, "status", "--timeout", "2s")
		return code == exitOK && strings.Contains(stdout, " leader ")
	})
	if code != exitOK || !strings.Contains(stdout, " leader ") {
		t.Fatalf("status over mutual TLS: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}

	code, stdout, stderr = runCLI(t, vars, "run", "--key", "tls-job", "--ttl", "5s", "--cluster-id", "prod-locks", "--",
		"sh", "-c", `echo "fence=$LOCK_FENCE"`)
	if code != exitOK || !strings.Contains(stdout, "fence=") {
		t.Fatalf("run over mutual TLS: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}

	// The same commands without the CA, without a client certificate, or
	// for another cluster are refused, and say why.
	noCA := map[string]string{"LOCKCLUSTER_TOKEN": token, "LOCKCLUSTER_TLS_CERT": app.CertFile, "LOCKCLUSTER_TLS_KEY": app.KeyFile}
	code, _, stderr = runCLI(t, noCA, "locks", "--endpoints", "https://"+httpAddr, "--timeout", "3s")
	if code == exitOK || !strings.Contains(stderr, "--tls-ca") || !strings.Contains(stderr, "LOCKCLUSTER_TLS_CA") {
		t.Errorf("locks without the CA: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runCLI(t, map[string]string{"LOCKCLUSTER_TOKEN": token}, "locks", "--endpoints", httpAddr, "--tls-ca", ca.File, "--timeout", "3s")
	if code == exitOK || !strings.Contains(stderr, "--tls-cert") || !strings.Contains(stderr, "LOCKCLUSTER_TLS_CERT") {
		t.Errorf("locks without a client certificate: exit %d, stderr %q", code, stderr)
	}
	t.Logf("without a client certificate: %s", stderr)
	code, _, stderr = runCLI(t, vars, "locks", "--cluster-id", "staging", "--timeout", "3s")
	if code == exitOK || !strings.Contains(stderr, `"prod-locks"`) {
		t.Errorf("locks for another cluster: exit %d, stderr %q", code, stderr)
	}
	if strings.Contains(stderr, token) || strings.Contains(agent.out.String(), token) {
		t.Errorf("the token appears in an error or the agent's log")
	}
}

// An agent restarted on its data dir with another --cluster-id refuses to
// start and names both IDs.
func TestAgent_RefusesDataDirOfAnotherCluster(t *testing.T) {
	skipShort(t, "starts an agent")
	dataDir := t.TempDir()
	httpAddr, raftAddr := loopback.MustFreeAddr(t), loopback.MustFreeAddr(t)
	p := startAgentProcess(t, nil, "--id", "n1", "--data-dir", dataDir, "--raft-addr", raftAddr,
		"--http-addr", httpAddr, "--cluster-id", "alpha", "--bootstrap-self", "--log-level", "info")
	waitUntilOutput(t, p.out, "node started")
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatal("the agent did not stop on SIGTERM")
	}
	waitUntilOutput(t, p.out, "stopped")

	code, _, stderr := runCLI(t, map[string]string{"LOCKCLUSTER_RAFT_SECRET": testRaftSecret}, "agent", "--id", "n1", "--data-dir", dataDir, "--raft-addr", raftAddr,
		"--http-addr", httpAddr, "--cluster-id", "beta", "--log-level", "off")
	if code != exitFailure || !strings.Contains(stderr, `"alpha"`) || !strings.Contains(stderr, `"beta"`) {
		t.Fatalf("restart under another cluster ID: exit %d, stderr %q", code, stderr)
	}
}

func waitUntilOutput(t *testing.T, out *syncbuf.Buffer, s string) {
	t.Helper()
	if !poll.Wait(20*time.Second, func() bool { return strings.Contains(out.String(), s) }) {
		t.Fatalf("no %q in the agent's output:\n%s", s, out.String())
	}
}

// The certificate recipe of docs/CLI.md (scripts/tls-certs.sh, openssl)
// makes certificates a mutual-TLS agent serves with and a client is let in
// with; its health listener answers a probe that has none.
func TestAgent_CertificateRecipe(t *testing.T) {
	skipShort(t, "starts an agent process")
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Fatal("openssl not found: install the Debian package openssl (scripts/test-deps.sh does)")
	}
	dir := t.TempDir()
	recipe := exec.Command("../../scripts/tls-certs.sh", dir, "n1=127.0.0.1", "app")
	if out, err := recipe.CombinedOutput(); err != nil {
		t.Fatalf("scripts/tls-certs.sh: %v\n%s", err, out)
	}
	file := func(name string) string { return filepath.Join(dir, name) }
	httpAddr, raftAddr, healthAddr := loopback.MustFreeAddr(t), loopback.MustFreeAddr(t), loopback.MustFreeAddr(t)
	startAgentProcess(t, nil, "--id", "n1", "--data-dir", t.TempDir(), "--raft-addr", raftAddr, "--http-addr", httpAddr,
		"--bootstrap-self", "--tls-cert", file("n1.pem"), "--tls-key", file("n1-key.pem"), "--tls-ca", file("ca.pem"),
		"--tls-client-auth", "--health-addr", healthAddr, "--log-level", "warn")
	vars := map[string]string{"LOCKCLUSTER_ENDPOINTS": httpAddr, "LOCKCLUSTER_TLS_CA": file("ca.pem"),
		"LOCKCLUSTER_TLS_CERT": file("app.pem"), "LOCKCLUSTER_TLS_KEY": file("app-key.pem")}
	var code int
	var stdout, stderr string
	poll.Wait(20*time.Second, func() bool {
		code, stdout, stderr = runCLI(t, vars, "status", "--timeout", "2s")
		return code == exitOK
	})
	if code != exitOK || !strings.Contains(stdout, " leader ") {
		t.Fatalf("status with the recipe's certificates: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	resp, err := http.Get("http://" + healthAddr + "/readyz")
	if err != nil {
		t.Fatalf("a probe without a certificate on --health-addr: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /readyz on --health-addr: %d", resp.StatusCode)
	}
}
