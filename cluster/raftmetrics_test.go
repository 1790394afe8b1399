package cluster

import (
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// scrape reads n's /metrics as series (name with labels, as written) to
// value.
func scrape(t *testing.T, c *apiClient, n *Node) map[string]float64 {
	t.Helper()
	r := c.do(n.HTTPAddr(), "GET", "/metrics", nil)
	mustStatus(t, r, http.StatusOK, "metrics of "+n.ID())
	out := map[string]float64{}
	for _, line := range strings.Split(r.Raw, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics of %s: line %q: %v", n.ID(), line, err)
		}
		out[line[:i]] = v
	}
	return out
}

func metric(t *testing.T, m map[string]float64, series string) float64 {
	t.Helper()
	v, ok := m[series]
	if !ok {
		t.Fatalf("metrics lack %s", series)
	}
	return v
}

func TestMetrics_RuntimeProcessAndRaft(t *testing.T) {
	nodes, leader, c := startLedCluster(t, 3)
	waitReady(t, c, nodes...)
	lbl := func(name string, n *Node) string { return name + `{node="` + n.ID() + `"}` }

	m := scrape(t, c, leader)
	if v := metric(t, m, "go_goroutines"); v < 1 {
		t.Errorf("go_goroutines = %v", v)
	}
	if runtime.GOOS == "linux" {
		if v := metric(t, m, "process_resident_memory_bytes"); v < 1<<20 {
			t.Errorf("process_resident_memory_bytes = %v, want at least a MiB", v)
		}
	}
	if v := metric(t, m, lbl("zerotal_lock_raft_term", leader)); v < 1 {
		t.Errorf("term = %v, want >= 1", v)
	}
	if v := metric(t, m, lbl("zerotal_lock_raft_voters", leader)); v != 3 {
		t.Errorf("voters = %v, want 3", v)
	}
	if v := metric(t, m, lbl("zerotal_lock_raft_last_contact_seconds", leader)); v != 0 {
		t.Errorf("leader's last contact = %v, want 0", v)
	}
	if v := metric(t, m, lbl("zerotal_lock_ready", leader)); v != 1 {
		t.Errorf("leader's zerotal_lock_ready = %v, want 1", v)
	}
	commit := metric(t, m, lbl("zerotal_lock_raft_commit_index", leader))
	if last := metric(t, m, lbl("zerotal_lock_raft_last_log_index", leader)); last < commit || commit < 1 {
		t.Errorf("commit index %v, last log index %v", commit, last)
	}
	metric(t, m, lbl("zerotal_lock_raft_applied_index", leader))
	metric(t, m, lbl("zerotal_lock_raft_fsm_pending", leader))
	metric(t, m, lbl("zerotal_lock_raft_last_snapshot_index", leader))

	mustStatus(t, c.acquire(leader.HTTPAddr(), "k", "o", time.Minute, 0), http.StatusOK, "acquire")
	m = scrape(t, c, leader)
	if after := metric(t, m, lbl("zerotal_lock_raft_commit_index", leader)); after <= commit {
		t.Errorf("commit index %v after an acquire, %v before", after, commit)
	}

	// A follower heard from its leader lately, and applies what commits.
	fol := followers(nodes, leader)[0]
	waitFor(t, 10*time.Second, "the acquire applied on "+fol.ID(), func() bool {
		m = scrape(t, c, fol)
		return metric(t, m, lbl("zerotal_lock_raft_applied_index", fol)) > commit
	})
	if v := metric(t, m, lbl("zerotal_lock_raft_last_contact_seconds", fol)); v < 0 || v > 10 {
		t.Errorf("follower's last contact = %vs", v)
	}
	if v := metric(t, m, lbl("zerotal_lock_raft_term", fol)); v < 1 {
		t.Errorf("follower's term = %v, want >= 1", v)
	}
}

// Nodes sharing one registry (several nodes in a process) each add their
// raft series, told apart by the node label; the registry's owner decides
// about the runtime collectors, so none are added to it.
func TestMetrics_SharedRegistryHoldsEveryNode(t *testing.T) {
	reg := prometheus.NewRegistry()
	nodes := startCluster(t, 2, func(c *Config) { c.Registry = reg })
	c := newClient(t)
	m := scrape(t, c, nodes[0])
	for _, n := range nodes {
		if v := metric(t, m, `zerotal_lock_raft_term{node="`+n.ID()+`"}`); v < 1 {
			t.Errorf("term of %s = %v", n.ID(), v)
		}
	}
	if _, ok := m["go_goroutines"]; ok {
		t.Error("the node added the Go collector to a registry it does not own")
	}
}
