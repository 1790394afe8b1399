package cluster

import (
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/internal/buildinfo"
)

func TestCluster_StatusAndMetricsCarryTheBuild(t *testing.T) {
	nodes := startCluster(t, 1, nil)
	addr := waitLeader(t, nodes).HTTPAddr()
	want := buildinfo.Version()
	if want == "" {
		t.Fatal("buildinfo.Version is empty")
	}

	c := newClient(t)
	r := c.do(addr, "GET", "/v1/status", nil)
	mustStatus(t, r, http.StatusOK, "status")
	if got := r.str("version"); got != want {
		t.Fatalf("/v1/status version = %q, want %q (%s)", got, want, r.Raw)
	}

	// The Go client decodes it.
	cl, err := client.New(client.Config{Addrs: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	st, err := cl.NodeStatus(t.Context(), addr)
	if err != nil || st.Version != want {
		t.Fatalf("client NodeStatus = %+v, %v; want version %q", st, err, want)
	}

	// Labels appear sorted by name in the text format.
	bi := buildinfo.Get()
	if bi.GoVersion != runtime.Version() {
		t.Fatalf("buildinfo Go version %q, runtime %q", bi.GoVersion, runtime.Version())
	}
	line := fmt.Sprintf(`zerotal_lock_build_info{goversion=%q,node="n1",revision=%q,version=%q} 1`,
		bi.GoVersion, bi.Revision, bi.Version)
	m := c.do(addr, "GET", "/metrics", nil)
	mustStatus(t, m, http.StatusOK, "metrics")
	if !strings.Contains(m.Raw, line) {
		t.Fatalf("metrics lack %s", line)
	}
}
