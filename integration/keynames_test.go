package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	lock "github.com/zerotal/lock"
	_ "github.com/zerotal/lock/drivers/cluster" // lock.Open of the "cluster" driver
	"github.com/zerotal/lock/internal/testkit/poll"
	"github.com/zerotal/lock/internal/testkit/syncbuf"
)

// One name is one lock through every entry point: the Go API, lockcluster
// run, the HTTP API as its docs show it, and lockcluster locks. A key
// taken through one is refused through each other.
func TestKeyNames_OneLockThroughEveryEntryPoint(t *testing.T) {
	c := newCluster(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	m, err := lock.Open(ctx, lock.Config{Driver: "cluster", Cluster: lock.ClusterConfig{Addrs: c.addrs(), Token: clientToken}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	const key = "deploy"

	// refusedEverywhereElse checks that key is held, under its own name,
	// and that every entry point but the holder's is refused.
	refusedEverywhereElse := func(t *testing.T, holder string) {
		t.Helper()
		if holder != "go" {
			l := m.Make(key, 10*time.Second)
			if ok, err := l.Acquire(ctx); err != nil || ok {
				t.Errorf("Go API acquired %q held through %s: ok=%v err=%v", key, holder, ok, err)
				_ = l.Release(ctx)
			}
		}
		if holder != "http" {
			if st, body := httpAcquire(t, ctx, c, key, "curl-user"); st != http.StatusConflict {
				t.Errorf("HTTP acquire of %q held through %s = %d %s, want 409", key, holder, st, body)
			}
		}
		if holder != "run" {
			if code, stdout, stderr := lockRun(t, ctx, c, "--key", key, "--ttl", "5s", "--no-wait", "--", "echo", "ran"); code != 75 || strings.Contains(stdout, "ran") {
				t.Errorf("lockcluster run on %q held through %s: exit %d, stdout %q, stderr %q; want 75 without running", key, holder, code, stdout, stderr)
			}
		}
		out := lockLocks(t, ctx, c)
		if !strings.Contains(out, `"`+key+`"`) {
			t.Errorf("lockcluster locks does not show %q held through %s:\n%s", key, holder, out)
		}
	}

	t.Run("Go API", func(t *testing.T) {
		l := m.Make(key, 30*time.Second)
		if ok, err := l.Acquire(ctx); err != nil || !ok {
			t.Fatalf("acquire: %v %v", ok, err)
		}
		refusedEverywhereElse(t, "go")
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("HTTP API", func(t *testing.T) {
		if st, body := httpAcquire(t, ctx, c, key, "curl-user"); st != http.StatusOK {
			t.Fatalf("HTTP acquire = %d %s", st, body)
		}
		refusedEverywhereElse(t, "http")
		if st, body := httpPost(t, ctx, c, "/v1/release", map[string]any{"key": key, "owner": "curl-user"}); st != http.StatusOK || !strings.Contains(body, `"released":true`) {
			t.Fatalf("HTTP release = %d %s", st, body)
		}
	})

	t.Run("lockcluster run", func(t *testing.T) {
		dir := t.TempDir()
		started, finish := filepath.Join(dir, "started"), filepath.Join(dir, "finish")
		// The command holds the lock until the test creates finish; the
		// loop is bounded so that it never outlives the test.
		script := `touch "$1"; i=0; while [ ! -e "$2" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done`
		cmd := exec.CommandContext(ctx, binary, "run", "--driver", "cluster", "--endpoints", strings.Join(c.addrs(), ","),
			"--key", key, "--ttl", "5s", "--", "sh", "-c", script, "sh", started, finish)
		var stderr syncbuf.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		poll.Until(t, 30*time.Second, "the child to start", func() bool {
			_, err := os.Stat(started)
			return err == nil
		})
		refusedEverywhereElse(t, "run")
		if err := os.WriteFile(finish, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("lockcluster run: %v; stderr %q", err, stderr.String())
		}
	})
}

func httpAcquire(t *testing.T, ctx context.Context, c *testCluster, key, owner string) (int, string) {
	return httpPost(t, ctx, c, "/v1/acquire", map[string]any{"key": key, "owner": owner, "ttl_ms": 30000})
}

// httpPost sends body as JSON to the first node, as curl would.
func httpPost(t *testing.T, ctx context.Context, c *testCluster, path string, body any) (int, string) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+c.addrs()[0]+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+clientToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(resp.Body)
	return resp.StatusCode, out.String()
}

// lockLocks runs "lockcluster locks" against c and returns its output.
func lockLocks(t *testing.T, ctx context.Context, c *testCluster) string {
	t.Helper()
	out, err := exec.CommandContext(ctx, binary, "locks", "--endpoints", c.addrs()[0]).CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return string(out)
}
