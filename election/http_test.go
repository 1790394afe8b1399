package election_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/cluster/clustertest"
	"github.com/zerotal/lock/election"
	"github.com/zerotal/lock/internal/testkit/realbackends"
)

// The README's election over the HTTP API: a candidate that speaks only
// HTTP campaigns with an owner TOKEN:VALUE; a Go observer sees it lead
// with its value and term, GET /v1/lock shows the value as the holder,
// and a Go candidate takes over once it releases.
func TestElection_OverTheHTTPAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	c := clustertest.Start(t, 1, nil)
	addr := c.Addrs()[0]
	post := func(path, body string) map[string]any {
		t.Helper()
		resp, err := http.Post("http://"+addr+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s %s: %s %v", path, body, resp.Status, out)
		}
		return out
	}
	const owner = `0123456789abcdef0123456789abcdef:worker-9:8080`
	got := post("/v1/acquire", `{"key":"sched","owner":"`+owner+`","ttl_ms":30000,"wait_ms":1000}`)
	term, _ := got["fence"].(float64)

	m := realbackends.Open(t, lock.Config{Driver: "cluster", Cluster: lock.ClusterConfig{Addrs: c.Addrs()}})
	e := mustNew(t, m, "sched", 10*time.Second)
	l, err := e.Leader(t.Context())
	if err != nil || l.Value != "worker-9:8080" || l.Term != uint64(term) || term == 0 {
		t.Fatalf("Leader = %+v, %v; want worker-9:8080 at term %v", l, err, term)
	}
	resp, err := http.Get("http://" + addr + "/v1/lock?key=sched")
	if err != nil {
		t.Fatal(err)
	}
	var shown map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&shown)
	resp.Body.Close()
	if shown["holder"] != "worker-9:8080" {
		t.Fatalf("GET /v1/lock = %v; want holder worker-9:8080", shown)
	}

	won := make(chan *election.Leadership, 1)
	go func() {
		g, err := e.Campaign(t.Context(), "go")
		if err == nil {
			won <- g
		}
		close(won)
	}()
	post("/v1/release", `{"key":"sched","owner":"`+owner+`"}`)
	select {
	case g, ok := <-won:
		if !ok || g.Term() <= uint64(term) {
			t.Fatalf("the Go candidate: %v; want it to lead at a term above %v", g, term)
		}
		_ = g.Resign(t.Context())
	case <-time.After(10 * time.Second):
		t.Fatal("the Go candidate did not lead after the HTTP leader released")
	}
}
