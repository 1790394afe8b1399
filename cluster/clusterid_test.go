package cluster

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
)

// joinRefused starts a one-node cluster configured by mod and a second
// node configured by joinMod that joins it, which must fail: it returns
// the first node, the time the refusal took and the join's error.
func joinRefused(t *testing.T, mod, joinMod func(*Config)) (*Node, time.Duration, error) {
	t.Helper()
	nodes := startCluster(t, 1, mod)
	cfg := testConfig(t, "n2")
	cfg.Join, cfg.BootstrapSelf = nodes[0].HTTPAddr(), false
	joinMod(&cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	n, err := NewNode(ctx, cfg)
	if err == nil {
		shutdown(t, n)
		t.Fatal("the node joined")
	}
	return nodes[0], time.Since(start), err
}

// A node configured for another cluster is refused at join, with both IDs
// named, at once rather than after retrying until its deadline.
func TestClusterID_JoinOfAnotherClusterIsRefused(t *testing.T) {
	n, took, err := joinRefused(t, func(c *Config) { c.ClusterID = "prod-locks" }, func(c *Config) { c.ClusterID = "staging-locks" })
	for _, want := range []string{`"prod-locks"`, `"staging-locks"`} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("join error %q does not name %s", err, want)
		}
	}
	if took > 10*time.Second {
		t.Fatalf("the refusal took %s: it was retried", took)
	}
	if peers := n.raft.GetConfiguration().Configuration().Servers; len(peers) != 1 {
		t.Fatalf("the cluster has %d servers after a refused join", len(peers))
	}
}

// A join with a wrong token is refused (401) and not retried.
func TestClusterID_JoinWithWrongTokenIsRefused(t *testing.T) {
	_, _, err := joinRefused(t, func(c *Config) { c.Token = "right-token-0123456789" }, func(c *Config) { c.Token = "wrong-token-0123456789" })
	if !strings.Contains(err.Error(), "401") || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("join error %q: want a 401 refusal before the deadline", err)
	}
}

// The cluster ID is stored with the data: restarting on the same data dir
// under another ID fails with both IDs named; under the same ID it works.
func TestClusterID_RestartUnderAnotherIDRefused(t *testing.T) {
	cfg := testConfig(t, "n1")
	cfg.ClusterID = "alpha"
	n := startNode(t, cfg)
	waitLeader(t, []*Node{n})
	shutdown(t, n)

	other := cfg
	other.ClusterID = "beta"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n2, err := NewNode(ctx, other)
	if err == nil {
		shutdown(t, n2)
		t.Fatal("a node started on another cluster's data dir")
	}
	if !strings.Contains(err.Error(), `"alpha"`) || !strings.Contains(err.Error(), `"beta"`) || !strings.Contains(err.Error(), cfg.DataDir) {
		t.Fatalf("error %q does not name both IDs and the data dir", err)
	}
	again := startNode(t, cfg)
	waitLeader(t, []*Node{again})
}

// Requests that name another cluster are refused with 403 wrong_cluster;
// those that name this one, or none, are served.
func TestClusterID_RequestForAnotherClusterIs403(t *testing.T) {
	nodes := startCluster(t, 1, func(c *Config) { c.ClusterID = "prod" })
	url := "http://" + nodes[0].HTTPAddr() + "/v1/status"
	for _, tc := range []struct {
		id     string
		status int
	}{{"", http.StatusOK}, {"prod", http.StatusOK}, {"staging", http.StatusForbidden}} {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.id != "" {
			req.Header.Set(api.HeaderClusterID, tc.id)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body bytes.Buffer
		_, _ = body.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Fatalf("cluster id %q: status %d, want %d (%s)", tc.id, resp.StatusCode, tc.status, body.String())
		}
		if tc.status == http.StatusForbidden && (!strings.Contains(body.String(), api.CodeWrongCluster) || !strings.Contains(body.String(), "staging")) {
			t.Fatalf("403 body %s lacks the code or the ID", body.String())
		}
	}
	http.DefaultClient.CloseIdleConnections()
}
