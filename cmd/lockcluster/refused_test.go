package main

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/cluster/access"
	"github.com/zerotal/lock/internal/loopback"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// refusedTokens are the credentials of TestCluster_RefusedRightsAndRevokedTokens.
const (
	tokJobs    = "jobs-client-token-0123456789"    // client, jobs/ only
	tokMetrics = "metrics-scraper-token-012345678" // metrics
	tokHolder  = "holder-client-token-0123456789"  // client, revoked while it holds
	tokRunner  = "runner-client-token-0123456789"  // client, revoked while run holds
)

// tokenFileLine is a token file's line for a credential.
func tokenFileLine(name, role, prefixes, token string) string {
	return name + " " + role + " " + prefixes + " sha256:" + access.HashToken(token) + "\n"
}

// A right the cluster refuses (403: a key outside the token's prefixes, a
// metrics token taking a lock) is an error of its own, with its status;
// a token revoked (SIGHUP of a token file without it) while a lock is held
// with refresh ends the hold at the next refresh, with a loss of its own
// reason that matches the 401 behind it, not as "backend unreachable" at
// the stop point; lockcluster run says so and exits 76.
func TestCluster_RefusedRightsAndRevokedTokens(t *testing.T) {
	skipShort(t, "starts an agent process")
	file := filepath.Join(t.TempDir(), "tokens")
	all := tokenFileLine("jobs", "client", "jobs/", tokJobs) + tokenFileLine("scraper", "metrics", "-", tokMetrics) +
		tokenFileLine("holder", "client", "*", tokHolder) + tokenFileLine("runner", "client", "*", tokRunner)
	if err := os.WriteFile(file, []byte(all), 0o600); err != nil {
		t.Fatal(err)
	}
	httpAddr := loopback.MustFreeAddr(t)
	agent := startProc(t, []string{"LOCKCLUSTER_TOKEN_FILE=" + file}, "agent", "--id", "n1", "--data-dir", t.TempDir(),
		"--raft-addr", loopback.MustFreeAddr(t), "--http-addr", httpAddr, "--bootstrap-self", "--log-level", "info")
	open := func(token string) (*lock.Manager, error) {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		return lock.Open(ctx, lock.Config{Driver: "cluster", Cluster: lock.ClusterConfig{Addrs: []string{httpAddr}, Token: token}})
	}
	var jobs *lock.Manager
	poll.Until(t, 30*time.Second, "the agent to serve", func() bool {
		m, err := open(tokJobs)
		if err != nil {
			return false
		}
		if err := m.Try(t.Context(), "jobs/ready", time.Second, func(context.Context, *lock.Lock) error { return nil }); err != nil {
			_ = m.Close()
			return false
		}
		jobs = m
		return true
	})
	defer jobs.Close()

	// 403: a key outside the token's prefixes, and a metrics token taking
	// a lock.
	noop := func(context.Context, *lock.Lock) error { return nil }
	checkForbidden(t, "a key outside the prefixes", jobs.Try(t.Context(), "other/1", time.Second, noop))
	metrics, err := open(tokMetrics)
	if err == nil {
		err = metrics.Try(t.Context(), "jobs/1", time.Second, noop)
		_ = metrics.Close()
	}
	checkForbidden(t, "a metrics token", err)

	// A token revoked while its lock is held with refresh. The TTL is long,
	// so that "backend unreachable" would come only at the stop point,
	// 24 s after the last refresh; the refusal ends the hold at the next
	// refresh, a second after the reload.
	holder, err := open(tokHolder)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	run := startProc(t, []string{"LOCKCLUSTER_ENDPOINTS=" + httpAddr, "LOCKCLUSTER_TOKEN=" + tokRunner},
		"run", "--key", "jobs/run", "--ttl", "9s", "--", "sleep", "60")
	held := make(chan struct{})
	type loss struct {
		cause, err error
		at         time.Time
	}
	lost := make(chan loss, 1)
	go func() {
		var cause error
		err := holder.Try(t.Context(), "jobs/held", 30*time.Second, func(ctx context.Context, _ *lock.Lock) error {
			close(held)
			<-ctx.Done()
			cause = context.Cause(ctx)
			return ctx.Err()
		}, lock.WithRefreshEvery(time.Second))
		lost <- loss{cause, err, time.Now()}
	}()
	<-held
	poll.Until(t, 30*time.Second, "run to hold jobs/run", func() bool {
		held, err := jobs.Exists(t.Context(), "jobs/run")
		return err == nil && held
	})
	if err := os.WriteFile(file, []byte(tokenFileLine("jobs", "client", "jobs/", tokJobs)), 0o600); err != nil {
		t.Fatal(err)
	}
	revoked := time.Now()
	if err := agent.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	var l loss
	select {
	case l = <-lost:
	case <-time.After(60 * time.Second):
		t.Fatal("the hold did not end after its token was revoked")
	}
	var le *lock.LostError
	if !errors.As(l.cause, &le) || le.Reason != lock.ErrLostRefused || !errors.Is(l.cause, lock.ErrUnauthorized) {
		t.Errorf("the callback's cause after the revocation: %v; want a loss of its own reason, matching ErrUnauthorized", l.cause)
	}
	if got := lock.StatusCode(l.cause); got != http.StatusUnauthorized {
		t.Errorf("the loss has status %d, want 401", got)
	}
	if !errors.Is(l.err, lock.ErrLost) || !errors.Is(l.err, lock.ErrUnauthorized) {
		t.Errorf("Try returned %v; want the loss", l.err)
	}
	t.Logf("the hold ended %v after the revocation: %v", l.at.Sub(revoked).Round(time.Millisecond), l.cause)
	if after := l.at.Sub(revoked); after > 15*time.Second {
		t.Errorf("the hold ended %v after the revocation; the refresh a second after it was refused", after.Round(time.Millisecond))
	}
	code := run.wait(t)
	t.Logf("lockcluster run, %v after the revocation: exit status %d; stderr:\n%s", time.Since(revoked).Round(time.Millisecond), code, run.stderr)
	if code != exitLost || !strings.Contains(run.stderr.String(), "credentials refused") {
		t.Errorf("lockcluster run after its token was revoked: exit status %d, want %d, saying \"credentials refused\"; stderr:\n%s", code, exitLost, run.stderr)
	}
}

// checkForbidden checks the error of a request the cluster answered 403.
func checkForbidden(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error; want 403", what)
		return
	}
	if !errors.Is(err, lock.ErrForbidden) || !errors.Is(err, client.ErrForbidden) {
		t.Errorf("%s: %v does not match lock.ErrForbidden and client.ErrForbidden", what, err)
	}
	if got := lock.StatusCode(err); got != http.StatusForbidden {
		t.Errorf("%s: %v has status %d, want 403", what, err, got)
	}
	for _, other := range []error{lock.ErrUnauthorized, lock.ErrInvalid, lock.ErrUnavailable, lock.ErrNotAcquired} {
		if errors.Is(err, other) {
			t.Errorf("%s: %v matches %v", what, err, other)
		}
	}
	if got := exitCodeFor(err); got != exitNoPerm {
		t.Errorf("%s: exit status %d, want %d", what, got, exitNoPerm)
	}
}
