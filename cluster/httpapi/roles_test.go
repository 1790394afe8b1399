package httpapi_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/api/stream"
	"github.com/zerotal/lock/cluster/access"
	"github.com/zerotal/lock/cluster/httpapi"
)

// The credentials of the role tests, one per role and scope.
const (
	tokClient   = "client-token-0123456789"    // client, keys under a/
	tokWide     = "wide-token-0123456789"      // client, every key
	tokOperator = "operator-token-0123456789"  // operator, every key
	tokScoped   = "scoped-op-token-0123456789" // operator, keys under a/
	tokMetrics  = "metrics-token-0123456789"   // metrics
)

func roleSet(t *testing.T, lines ...string) *access.Set {
	t.Helper()
	set, err := access.Parse(strings.NewReader(strings.Join(lines, "\n")), "test")
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func line(name, role, prefixes, token string) string {
	return fmt.Sprintf("%s %s %s sha256:%s", name, role, prefixes, access.HashToken(token))
}

// Every route against every role, in and out of the prefixes: what each
// may do is answered as by a node without credentials, and everything
// else 403 with code forbidden, naming the credential and the missing
// right (or the key outside its prefixes), and logged with the
// credential's name and never its token. No token, or one the node does
// not know, is 401.
func TestRoles_EveryRouteAgainstEveryRole(t *testing.T) {
	set := roleSet(t,
		"# the test's credentials",
		line("team-a", "client", "a/", tokClient),
		line("wide", "client", "*", tokWide),
		line("ops", "operator", "*", tokOperator),
		line("ops-a", "operator", "a/", tokScoped),
		line("scraper", "metrics", "-", tokMetrics))
	var logs bytes.Buffer
	h := newHandler(newFakeStore("n1", "n2"), httpapi.Options{NodeID: "n1", ClusterID: "c1",
		Credentials: func() *access.Set { return set },
		Logger:      slog.New(slog.NewTextHandler(&logs, nil)),
		Metrics:     http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("m 1\n")) }),
		Debug:       http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("debug")) }),
	})
	type call struct {
		name, method, path, body string
	}
	acquire := func(key string) call {
		return call{"acquire " + key, "POST", api.PathAcquire, `{"key":"` + key + `","owner":"o","ttl_ms":60000}`}
	}
	calls := map[string]call{
		"acquire a/":  acquire("a/1"),
		"acquire b/":  acquire("b/1"),
		"release a/":  {"", "POST", api.PathRelease, `{"key":"a/1","owner":"o"}`},
		"release b/":  {"", "POST", api.PathRelease, `{"key":"b/1","owner":"o"}`},
		"extend a/":   {"", "POST", api.PathExtend, `{"key":"a/1","owner":"o","ttl_ms":60000}`},
		"extend b/":   {"", "POST", api.PathExtend, `{"key":"b/1","owner":"o","ttl_ms":60000}`},
		"get a/":      {"", "GET", api.PathLock + "?key=a/free", ""},
		"get b/":      {"", "GET", api.PathLock + "?key=b/free", ""},
		"list a/":     {"", "GET", api.PathLocks + "?prefix=a/", ""},
		"list all":    {"", "GET", api.PathLocks, ""},
		"force a/":    {"", "POST", api.PathForceRelease, `{"key":"a/1"}`},
		"force b/":    {"", "POST", api.PathForceRelease, `{"key":"b/1"}`},
		"status":      {"", "GET", api.PathStatus, ""},
		"join":        {"", "POST", api.PathJoin, `{"id":"n1","addr":"127.0.0.1:7101","http":"127.0.0.1:7001"}`},
		"leave":       {"", "POST", api.PathLeave, `{"id":"n2"}`},
		"metrics":     {"", "GET", api.PathMetrics, ""},
		"debug":       {"", "GET", "/debug/pprof/", ""},
		"no endpoint": {"", "GET", "/v1/nothing", ""},
	}
	// allowed[call] lists the tokens that may make it; "get" of a free key
	// answers 404 and a release of a key not held 200 with released false:
	// any status but 401 and 403 counts as served.
	allowed := map[string][]string{
		"acquire a/":  {tokClient, tokWide, tokOperator, tokScoped},
		"acquire b/":  {tokWide, tokOperator},
		"release a/":  {tokClient, tokWide, tokOperator, tokScoped},
		"release b/":  {tokWide, tokOperator},
		"extend a/":   {tokClient, tokWide, tokOperator, tokScoped},
		"extend b/":   {tokWide, tokOperator},
		"get a/":      {tokClient, tokWide, tokOperator, tokScoped},
		"get b/":      {tokWide, tokOperator},
		"list a/":     {tokClient, tokWide, tokOperator, tokScoped},
		"list all":    {tokWide, tokOperator},
		"force a/":    {tokOperator, tokScoped},
		"force b/":    {tokOperator},
		"status":      {tokClient, tokWide, tokOperator, tokScoped},
		"join":        {tokOperator, tokScoped},
		"leave":       {tokOperator, tokScoped},
		"metrics":     {tokOperator, tokScoped, tokMetrics},
		"debug":       {tokOperator, tokScoped},
		"no endpoint": {tokClient, tokWide, tokOperator, tokScoped, tokMetrics},
	}
	for name, c := range calls {
		for _, tok := range []string{tokClient, tokWide, tokOperator, tokScoped, tokMetrics} {
			a := do(h, c.method, c.path, c.body, api.HeaderAuthorization, api.Bearer(tok))
			may := false
			for _, t := range allowed[name] {
				may = may || t == tok
			}
			switch {
			case may && (a.status == http.StatusUnauthorized || a.status == http.StatusForbidden):
				t.Errorf("%s with %s: refused %d %s", name, tok, a.status, a.raw)
			case !may && (a.status != http.StatusForbidden || a.err.Code != api.CodeForbidden):
				t.Errorf("%s with %s: %d %s, want 403 forbidden", name, tok, a.status, a.raw)
			case !may && !strings.Contains(a.err.Message, "lacks the") && !strings.Contains(a.err.Message, "only"):
				t.Errorf("%s with %s: the refusal names no right: %s", name, tok, a.err.Message)
			}
		}
		for _, hdr := range [][]string{nil, {api.HeaderAuthorization, api.Bearer("unknown-token-0123456789")}} {
			if a := do(h, c.method, c.path, c.body, hdr...); a.status != http.StatusUnauthorized {
				t.Errorf("%s with %v: %d %s, want 401", name, hdr, a.status, a.raw)
			}
		}
	}
	// The refusals are logged under the credential's name, never a token.
	if !strings.Contains(logs.String(), "credential=team-a") || !strings.Contains(logs.String(), "request refused") {
		t.Errorf("no refusal logged for team-a:\n%s", logs.String())
	}
	for _, tok := range []string{tokClient, tokWide, tokOperator, tokScoped, tokMetrics} {
		if strings.Contains(logs.String(), tok) {
			t.Fatalf("a token is in the log")
		}
	}
	// The refusal of a client's join names the right.
	a := do(h, "POST", api.PathJoin, calls["join"].body, api.HeaderAuthorization, api.Bearer(tokClient))
	if !strings.Contains(a.err.Message, `credential "team-a" (role client) lacks the "membership" right`) {
		t.Errorf("join by a client: %s", a.err.Message)
	}
}

// A reload takes effect at the next request, on a stream opened before
// too: a removed token is refused at once, an added one admitted.
func TestRoles_ReloadTakesEffectOnOpenStreams(t *testing.T) {
	var cur atomic.Pointer[access.Set]
	cur.Store(roleSet(t, line("old", "client", "*", tokClient)))
	s := newStreamServerWith(t, httpapi.Options{NodeID: "n1", ClusterID: "c1", Credentials: cur.Load})
	resp, c := s.open(t, "Connection", "Upgrade", "Upgrade", stream.Protocol, api.HeaderAuthorization, api.Bearer(tokClient))
	if c == nil {
		t.Fatalf("upgrade answered %s", resp.Status)
	}
	c.send(stream.Request{ID: 1, Method: http.MethodGet, Target: api.PathStatus})
	if a := c.answer(); a.Status != http.StatusOK {
		t.Fatalf("before the reload: %d %s", a.Status, a.Body)
	}
	cur.Store(roleSet(t, line("new", "client", "*", tokWide)))
	c.send(stream.Request{ID: 2, Method: http.MethodGet, Target: api.PathStatus})
	if a := c.answer(); a.Status != http.StatusUnauthorized {
		t.Fatalf("a removed token on an open stream: %d %s, want 401", a.Status, a.Body)
	}
	if a := do(s.srv.Config.Handler, "GET", api.PathStatus, "", api.HeaderAuthorization, api.Bearer(tokWide)); a.status != http.StatusOK {
		t.Fatalf("an added token: %d %s", a.status, a.raw)
	}
}

// A TLS client certificate verified against the node's CA maps to the
// credential its common name names (cn: in the token file).
func TestRoles_ClientCertificateMapsToARole(t *testing.T) {
	set := roleSet(t, "worker-7 client jobs/ cn:worker-7", line("ops", "operator", "*", tokOperator))
	h := newHandler(newFakeStore(), httpapi.Options{NodeID: "n1", ClusterID: "c1", Credentials: func() *access.Set { return set }})
	req := httpRequestWithCN(t, "POST", api.PathAcquire, `{"key":"jobs/1","owner":"o","ttl_ms":1000}`, "worker-7")
	if a := serve(h, req); a.status != http.StatusOK {
		t.Fatalf("acquire by certificate: %d %s", a.status, a.raw)
	}
	req = httpRequestWithCN(t, "POST", api.PathAcquire, `{"key":"other","owner":"o","ttl_ms":1000}`, "worker-7")
	if a := serve(h, req); a.status != http.StatusForbidden {
		t.Fatalf("acquire outside the prefix by certificate: %d %s", a.status, a.raw)
	}
	req = httpRequestWithCN(t, "POST", api.PathJoin, `{"id":"n1","addr":"127.0.0.1:7101","http":"127.0.0.1:7001"}`, "worker-7")
	if a := serve(h, req); a.status != http.StatusForbidden {
		t.Fatalf("join by a client certificate: %d %s", a.status, a.raw)
	}
	req = httpRequestWithCN(t, "GET", api.PathStatus, "", "stranger")
	if a := serve(h, req); a.status != http.StatusUnauthorized {
		t.Fatalf("a certificate the file does not name: %d %s", a.status, a.raw)
	}
}

// A request a client certificate admitted on a follower keeps its rights
// at the leader, which sees the follower's connection, not the client's
// certificate: the follower names the credential on its own connection,
// which the leader checks is the forwarding member's (Options.Forwarder).
// A client that sends the header itself is refused.
func TestRoles_CertificateCredentialCrossesAForward(t *testing.T) {
	set := roleSet(t, "worker-7 client jobs/ cn:worker-7", line("ops", "operator", "*", tokOperator))
	creds := func() *access.Set { return set }
	leaderStore := newFakeStore("n1", "n2")
	srv := httptest.NewServer(overTLSAs("n2", newHandler(leaderStore, httpapi.Options{NodeID: "n1", ClusterID: "c1", Credentials: creds, Forwarder: memberByCN})))
	defer srv.Close()
	followerStore := newFakeStore("n1", "n2")
	followerStore.setLeader(strings.TrimPrefix(srv.URL, "http://"), nil)
	follower := newHandler(followerStore, httpapi.Options{NodeID: "n2", ClusterID: "c1", Credentials: creds, Forwarder: memberByCN})

	req := httpRequestWithCN(t, "POST", api.PathAcquire, `{"key":"jobs/1","owner":"o","ttl_ms":60000}`, "worker-7")
	if a := serve(follower, req); a.status != http.StatusOK {
		t.Fatalf("acquire by certificate through a follower: %d %s", a.status, a.raw)
	}
	if _, ok, _ := leaderStore.Get(t.Context(), "jobs/1"); !ok {
		t.Fatal("the leader did not grant the forwarded acquire")
	}
	forged := httptest.NewRequest("POST", api.PathForceRelease, strings.NewReader(`{"key":"jobs/1"}`))
	forged.Header.Set(api.HeaderCredential, "worker-7")
	forged.Header.Set(api.HeaderForwardedBy, "n2")
	if a := serve(newHandler(leaderStore, httpapi.Options{NodeID: "n1", ClusterID: "c1", Credentials: creds, Forwarder: memberByCN}), forged); a.status != http.StatusUnauthorized {
		t.Fatalf("a forged credential header: %d %s, want 401", a.status, a.raw)
	}
}
