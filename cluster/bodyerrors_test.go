package cluster

import (
	"net/http"
	"strings"
	"testing"

	"github.com/zerotal/lock/api"
)

// A 400 names the field or the query parameter at fault in the API's own
// terms, and never a Go type or struct name.
func TestAPI_BadRequestsNameTheFieldNotGoTypes(t *testing.T) {
	n := startCluster(t, 1, nil)[0]
	c := newClient(t)
	addr := n.HTTPAddr()
	for _, tc := range []struct {
		name, method, path string
		body               any
		want               string
	}{
		{"ttl as a string", "POST", "/v1/acquire", `{"key":"k","owner":"o","ttl_ms":"10s"}`, "lock: invalid ttl_ms: must be a number, not a string"},
		{"ttl with a fraction", "POST", "/v1/acquire", `{"key":"k","owner":"o","ttl_ms":1.5}`, "lock: invalid ttl_ms: must be an integer in range, not 1.5"},
		{"owner as a number", "POST", "/v1/release", `{"key":"k","owner":7}`, "lock: invalid owner: must be a string, not a number"},
		{"an array for the body", "POST", "/v1/acquire", `[1]`, "lock: invalid body: must be a JSON object, not an array"},
		{"unknown field", "POST", "/v1/acquire", `{"key":"k","owner":"o","ttl":5}`, `lock: invalid body: unknown field "ttl"; the fields are key, owner, ttl_ms, wait_ms`},
		{"cut short", "POST", "/v1/acquire", `{"key":"k"`, "lock: invalid body: the JSON object is cut short"},
		{"not JSON", "POST", "/v1/acquire", `key=k`, "lock: invalid body: not valid JSON at byte 1: invalid character 'k' looking for beginning of value"},
		{"missing key", "POST", "/v1/acquire", `{"owner":"o","ttl_ms":1000}`, "lock: invalid key: empty"},
		{"missing ttl", "POST", "/v1/acquire", `{"key":"k","owner":"o"}`, "lock: invalid ttl_ms: "},
		{"missing query parameter", "GET", "/v1/lock", nil, "lock: invalid key: empty"},
		{"bad limit", "GET", "/v1/locks?limit=x", nil, `lock: invalid limit: "x" is not an integer`},
		{"leave without id", "POST", "/v1/leave", `{}`, "lock: invalid id: missing"},
		{"join with a numeric id", "POST", "/v1/join", `{"id":4,"addr":"127.0.0.1:1"}`, "lock: invalid id: must be a string, not a number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.do(addr, tc.method, tc.path, tc.body)
			if r.Status != http.StatusBadRequest || r.str("code") != api.CodeInvalid {
				t.Fatalf("status %d code %q, want 400 invalid; body %s", r.Status, r.str("code"), r.Raw)
			}
			msg := r.str("message")
			if !strings.HasPrefix(msg, tc.want) {
				t.Errorf("message %q, want it to start with %q", msg, tc.want)
			}
			for _, goName := range []string{"Go ", "struct", "int64", "uint64", "Request", "cluster."} {
				if strings.Contains(msg, goName) {
					t.Errorf("message %q shows the Go name %q", msg, goName)
				}
			}
		})
	}
}

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
