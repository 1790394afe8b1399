//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/cluster/access"
	"github.com/zerotal/lock/internal/loopback"
	"github.com/zerotal/lock/internal/testkit/poll"
	"github.com/zerotal/lock/internal/testkit/testtls"
)

// status says what each node refused, in full: over mutual TLS without a
// client certificate, the whole hint (which has a colon of its own: "mutual
// TLS: set --tls-cert ..."); with a token the node knows but whose role
// lacks the status right (a scraper's), "forbidden" and exit 77, not
// "unreachable". Before, the hint ended at "(mutual TLS" and a 403 showed
// as unreachable.
func TestStatus_SaysWhatEachNodeRefused(t *testing.T) {
	skipShort(t, "starts an agent process")
	ca := testtls.NewCA(t, "cluster")
	node := ca.Issue(t, "n1")
	app := ca.Issue(t, "app", "app.invalid")
	const scraper, operator = "scraper-token-0123456789abcdef", "operator-token-0123456789abcdef"
	tokens := filepath.Join(t.TempDir(), "tokens")
	lines := "scrape metrics - sha256:" + access.HashToken(scraper) + "\nops operator * sha256:" + access.HashToken(operator) + "\n"
	if err := os.WriteFile(tokens, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	httpAddr, raftAddr := loopback.MustFreeAddr(t), loopback.MustFreeAddr(t)
	startAgentProcess(t, nil, "--id", "n1", "--data-dir", t.TempDir(), "--raft-addr", raftAddr, "--http-addr", httpAddr,
		"--bootstrap-self", "--tls-cert", node.CertFile, "--tls-key", node.KeyFile, "--tls-ca", ca.File, "--tls-client-auth",
		"--token-file", tokens, "--log-level", "warn")
	withCert := map[string]string{"LOCKCLUSTER_ENDPOINTS": httpAddr, "LOCKCLUSTER_TLS_CA": ca.File,
		"LOCKCLUSTER_TLS_CERT": app.CertFile, "LOCKCLUSTER_TLS_KEY": app.KeyFile}
	with := func(vars map[string]string, k, v string) map[string]string {
		out := map[string]string{k: v}
		for key, val := range vars {
			if key != k {
				out[key] = val
			}
		}
		return out
	}
	poll.Until(t, 30*time.Second, "the agent to lead", func() bool {
		code, _, _ := runCLI(t, with(withCert, "LOCKCLUSTER_TOKEN", operator), "status", "--timeout", "2s")
		return code == exitOK
	})

	code, stdout, stderr := runCLI(t, with(withCert, "LOCKCLUSTER_TOKEN", scraper), "status", "--timeout", "5s")
	if code != exitNoPerm || !strings.Contains(stdout, "forbidden") || strings.Contains(stdout, "unreachable") {
		t.Errorf("status with a scraper's token: exit %d, want %d; stdout:\n%s\nstderr: %s", code, exitNoPerm, stdout, stderr)
	}

	noCert := map[string]string{"LOCKCLUSTER_ENDPOINTS": httpAddr, "LOCKCLUSTER_TLS_CA": ca.File, "LOCKCLUSTER_TOKEN": operator}
	code, stdout, stderr = runCLI(t, noCert, "status", "--timeout", "5s")
	const hint = "TLS: it refused this client's certificate (mutual TLS: pass --tls-cert and --tls-key (LOCKCLUSTER_TLS_CERT, LOCKCLUSTER_TLS_KEY))\n"
	if code == exitOK || !strings.Contains(stdout, "tls-error") || !strings.Contains(stderr, hint) {
		t.Errorf("status without a client certificate: exit %d; stdout:\n%s\nstderr: %s\nwant the whole hint %q...", code, stdout, stderr, hint)
	}
}
