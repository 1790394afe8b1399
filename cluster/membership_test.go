package cluster

import (
	"net/http"
	"strings"
	"testing"

	"github.com/zerotal/lock/api"
)

// Leave of an id the cluster does not have is a 404 not_found that names
// the members, not a success: a typo must not read as a removal.
func TestNode_LeaveOfAnUnknownIDIsNotFound(t *testing.T) {
	n := startCluster(t, 1, nil)[0]
	c := newClient(t)
	r := c.do(n.HTTPAddr(), "POST", "/v1/leave", map[string]any{"id": "n9"})
	if r.Status != http.StatusNotFound || r.str("code") != api.CodeNotFound {
		t.Fatalf("leave n9: status %d code %q, want 404 not_found; body %s", r.Status, r.str("code"), r.Raw)
	}
	if msg := r.str("message"); !strings.Contains(msg, `unknown member "n9"`) || !strings.Contains(msg, "n1") {
		t.Fatalf("message %q does not name the unknown id and the members", msg)
	}
	st := c.do(n.HTTPAddr(), "GET", "/v1/status", nil)
	if peers, _ := st.Body["peers"].([]any); len(peers) != 1 {
		t.Fatalf("peers after a refused leave = %s", st.Raw)
	}
}
