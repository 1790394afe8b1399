package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/access"
	"github.com/zerotal/lock/internal/loopback"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// An agent with a token file: a client token takes locks but may not
// join; the file read again on SIGHUP drops a token at once and admits a
// new one; a file that does not parse keeps the credentials in force. The
// token line comes from lockcluster token.
func TestAgent_TokenFileRolesAndReloadOnSIGHUP(t *testing.T) {
	skipShort(t, "starts an agent process")
	file := filepath.Join(t.TempDir(), "tokens")
	code, stdout, stderr := runCLI(t, nil, "token", "--name", "team-a", "--role", "client", "--prefixes", "jobs/", "--token-file", file)
	line, _ := os.ReadFile(file)
	if code != exitOK || !strings.HasPrefix(string(line), "team-a client jobs/ sha256:") {
		t.Fatalf("lockcluster token: exit %d, stdout %q, stderr %q, file %q", code, stdout, stderr, line)
	}
	tokA := strings.TrimSpace(stdout)
	if strings.Contains(string(line), tokA) {
		t.Fatal("the token file line holds the token itself")
	}
	const tokB = "second-client-token-0123456789"
	httpAddr := loopback.MustFreeAddr(t)
	p := startProc(t, []string{"LOCKCLUSTER_TOKEN_FILE=" + file}, "agent", "--id", "n1", "--data-dir", t.TempDir(),
		"--raft-addr", loopback.MustFreeAddr(t), "--http-addr", httpAddr, "--bootstrap-self", "--log-level", "info")

	status := func(tok, method, path, body string) int {
		req, _ := http.NewRequest(method, "http://"+httpAddr+path, strings.NewReader(body))
		req.Header.Set(api.HeaderAuthorization, api.Bearer(tok))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	acquire := func(tok string) int {
		return status(tok, "POST", api.PathAcquire, `{"key":"jobs/1","owner":"o","ttl_ms":1000}`)
	}
	poll.Until(t, 30*time.Second, "the agent to serve team-a", func() bool { return acquire(tokA) == http.StatusOK })
	if got := acquire(tokB); got != http.StatusUnauthorized {
		t.Fatalf("an unknown token: %d", got)
	}
	if got := status(tokA, "POST", api.PathJoin, `{"id":"n9","addr":"127.0.0.1:1","http":"127.0.0.1:2"}`); got != http.StatusForbidden {
		t.Fatalf("a join with a client token: %d, want 403", got)
	}
	if got := status(tokA, "POST", api.PathAcquire, `{"key":"other","owner":"o","ttl_ms":1000}`); got != http.StatusForbidden {
		t.Fatalf("a key outside team-a's prefixes: %d, want 403", got)
	}

	// A file that does not parse: the credentials in force stay.
	if err := os.WriteFile(file, []byte("team-a client\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the refused reload in the log", func() bool {
		return strings.Contains(p.stderr.String(), "token file not reloaded")
	})
	if got := acquire(tokA); got != http.StatusOK {
		t.Fatalf("after a bad reload: %d, want team-a still admitted", got)
	}

	// An empty file (read between its truncation and its write): refused
	// too, the credentials in force stay.
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the empty file's refused reload in the log", func() bool {
		return strings.Count(p.stderr.String(), "token file not reloaded") >= 2 || strings.Count(p.stderr.String(), "token file reloaded") >= 1
	})
	if got := acquire(tokA); got != http.StatusOK {
		t.Fatalf("after a reload of an empty file: %d, want team-a still admitted", got)
	}
	if !strings.Contains(p.stderr.String(), "is empty") {
		t.Fatalf("the agent's log does not say the file was empty:\n%s", p.stderr.String())
	}

	// team-a dropped, team-b added.
	lineB := fmt.Sprintf("team-b client * sha256:%s\n", access.HashToken(tokB))
	if err := os.WriteFile(file, []byte(lineB), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "team-b admitted after SIGHUP", func() bool { return acquire(tokB) == http.StatusOK })
	if got := acquire(tokA); got != http.StatusUnauthorized {
		t.Fatalf("a token removed from the file: %d, want 401", got)
	}
	if strings.Contains(p.stderr.String(), tokA) || strings.Contains(p.stderr.String(), tokB) {
		t.Fatal("a token is in the agent's log")
	}
}
