package httpapi_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/access"
	"github.com/zerotal/lock/cluster/httpapi"
)

// uiNode is a handler over a store holding a/x (with a queue), a/y and
// b/z, with the role tests' credentials.
func uiNode(t *testing.T) (http.Handler, *fakeStore) {
	t.Helper()
	set := roleSet(t,
		line("team-a", "client", "a/", tokClient),
		line("ops", "operator", "*", tokOperator),
		line("scraper", "metrics", "-", tokMetrics))
	s := newFakeStore("n1")
	s.locks["a/x"] = &api.Lock{Key: "a/x", Owner: "0123456789abcdef0123456789abcdef:A", Holder: "A", Fence: 7, Remaining: time.Minute,
		Age: 3 * time.Second, Waiters: 1, Queue: []api.Waiting{{Owner: "fedcba9876543210fedcba9876543210:B", Holder: "B", AgeMillis: 1500}}}
	s.locks["a/y"] = &api.Lock{Key: "a/y", Owner: "fedcba9876543210fedcba9876543210:B", Holder: "B", Fence: 8, Remaining: time.Minute,
		Waiters: 1, Queue: []api.Waiting{{Owner: "0123456789abcdef0123456789abcdef:A", Holder: "A"}}}
	s.locks["b/z"] = &api.Lock{Key: "b/z", Owner: "cccccccccccccccccccccccccccccccc:C", Holder: "C", Fence: 9, Remaining: time.Minute}
	return newHandler(s, httpapi.Options{NodeID: "n1", ClusterID: "c1", Credentials: func() *access.Set { return set }}), s
}

func basic(token string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte("anyone:"+token))
}

func TestUI_NoCredentialIsABasicChallenge(t *testing.T) {
	h, _ := uiNode(t)
	for _, hdr := range [][]string{nil, {"Authorization", basic("wrong")}, {"Authorization", "Bearer wrong"}} {
		a := do(h, "GET", "/ui", "", hdr...)
		mustStatus(t, a, http.StatusUnauthorized, "GET /ui with "+strings.Join(hdr, " "))
		if got := a.header.Get("WWW-Authenticate"); !strings.HasPrefix(got, `Basic realm="lockcluster"`) {
			t.Errorf("WWW-Authenticate = %q, want a Basic challenge for realm lockcluster", got)
		}
		if strings.Contains(string(a.raw), "a/x") || strings.Contains(string(a.raw), "n1") {
			t.Errorf("the 401 page tells something of the node: %s", a.raw)
		}
	}
	// A metrics credential is known but may not read locks.
	mustStatus(t, do(h, "GET", "/ui", "", "Authorization", basic(tokMetrics)), http.StatusForbidden, "GET /ui as metrics")
}

// The page reads without JavaScript: the table is in the HTML, under a
// policy that runs only the page's own script.
func TestUI_OperatorPageReadsWithoutScript(t *testing.T) {
	h, _ := uiNode(t)
	for _, auth := range []string{basic(tokOperator), "Bearer " + tokOperator} {
		a := do(h, "GET", "/ui", "", "Authorization", auth)
		mustStatus(t, a, http.StatusOK, "GET /ui as operator")
		body := string(a.raw)
		for _, want := range []string{"a/x", "a/y", "b/z", ">7<", "Force-release", `id="cycles"`, "A ⇄ B", "3s", "1.5s", "leader"} {
			if !strings.Contains(body, want) {
				t.Errorf("the page lacks %q:\n%s", want, body)
			}
		}
		csp := a.header.Get("Content-Security-Policy")
		nonce := regexp.MustCompile(`script-src 'nonce-([^']+)'`).FindStringSubmatch(csp)
		if nonce == nil || strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "default-src 'none'") {
			t.Fatalf("Content-Security-Policy = %q, want default-src 'none' and a script nonce", csp)
		}
		if !strings.Contains(body, `<script nonce="`+nonce[1]+`">`) || strings.Count(body, "<script") != 1 {
			t.Errorf("the page's one script does not carry the policy's nonce")
		}
		if strings.Contains(body, tokOperator) {
			t.Errorf("the page carries the token")
		}
	}
}

func TestUI_ClientSeesOnlyItsPrefixesAndCannotForce(t *testing.T) {
	h, s := uiNode(t)
	a := do(h, "GET", "/ui", "", "Authorization", basic(tokClient))
	mustStatus(t, a, http.StatusOK, "GET /ui as team-a")
	body := string(a.raw)
	if !strings.Contains(body, "a/x") || strings.Contains(body, "b/z") {
		t.Errorf("team-a's page: want a/x and not b/z:\n%s", body)
	}
	if strings.Contains(body, "/ui/force-release") || strings.Contains(body, `name="token"`) {
		t.Errorf("team-a's page has a force-release form")
	}
	// A filter beyond its prefixes lists nothing of b/.
	if a := do(h, "GET", "/ui?prefix=b/", "", "Authorization", basic(tokClient)); strings.Contains(string(a.raw), "b/z") {
		t.Errorf("team-a's page under prefix b/ shows b/z")
	}
	// A forged POST, even with an operator page's token, is refused.
	token := formTokenOf(t, h, basic(tokOperator))
	f := url.Values{"key": {"a/x"}, "token": {token}, "confirm": {"yes"}}
	a = do(h, "POST", "/ui/force-release", f.Encode(), "Authorization", basic(tokClient), "Content-Type", "application/x-www-form-urlencoded")
	mustStatus(t, a, http.StatusForbidden, "team-a's force-release")
	if _, ok := s.locks["a/x"]; !ok {
		t.Fatal("a/x was released by team-a's POST")
	}
}

// formTokenOf is the force-release form's token on the page auth sees.
func formTokenOf(t *testing.T, h http.Handler, auth string) string {
	t.Helper()
	a := do(h, "GET", "/ui", "", "Authorization", auth)
	m := regexp.MustCompile(`name="token" value="([^"]+)"`).FindSubmatch(a.raw)
	if m == nil {
		t.Fatalf("no form token on the page:\n%s", a.raw)
	}
	return string(m[1])
}

func TestUI_ForceReleaseIsConfirmedSameOriginAndTokened(t *testing.T) {
	h, s := uiNode(t)
	auth := basic(tokOperator)
	token := formTokenOf(t, h, auth)
	post := func(f url.Values, hdr ...string) answer {
		return do(h, "POST", "/ui/force-release", f.Encode(),
			append([]string{"Authorization", auth, "Content-Type", "application/x-www-form-urlencoded", "Host", "example.com"}, hdr...)...)
	}
	// The button's POST asks for a confirmation and frees nothing.
	a := post(url.Values{"key": {"a/x"}, "token": {token}})
	mustStatus(t, a, http.StatusOK, "force-release without confirm")
	if !strings.Contains(string(a.raw), `name="confirm" value="yes"`) || !strings.Contains(string(a.raw), "<b>A</b>") {
		t.Errorf("the confirmation page does not ask, naming the holder:\n%s", a.raw)
	}
	refused := []struct {
		name string
		form url.Values
		hdr  []string
	}{
		{"another site's form", url.Values{"key": {"a/x"}, "token": {token}, "confirm": {"yes"}}, []string{"Sec-Fetch-Site", "cross-site"}},
		{"another origin", url.Values{"key": {"a/x"}, "token": {token}, "confirm": {"yes"}}, []string{"Origin", "https://evil.example"}},
		{"no token", url.Values{"key": {"a/x"}, "confirm": {"yes"}}, nil},
		{"a wrong token", url.Values{"key": {"a/x"}, "token": {token + "x"}, "confirm": {"yes"}}, nil},
	}
	for _, r := range refused {
		mustStatus(t, post(r.form, r.hdr...), http.StatusForbidden, r.name)
		if _, ok := s.locks["a/x"]; !ok {
			t.Fatalf("%s released a/x", r.name)
		}
	}
	a = post(url.Values{"key": {"a/x"}, "token": {token}, "confirm": {"yes"}, "prefix": {"a/"}}, "Sec-Fetch-Site", "same-origin")
	mustStatus(t, a, http.StatusSeeOther, "confirmed force-release")
	if loc := a.header.Get("Location"); loc != "/ui?prefix=a%2F&released=a%2Fx" {
		t.Errorf("Location = %q, want back to the table", loc)
	}
	if _, ok := s.locks["a/x"]; ok {
		t.Fatal("a/x is still held after a confirmed force-release")
	}
}

func TestListLocks_WaitForEdgesAndHolderFilter(t *testing.T) {
	h, _ := uiNode(t)
	a := do(h, "GET", "/v1/locks?holder=A", "", "Authorization", "Bearer "+tokOperator)
	mustStatus(t, a, http.StatusOK, "GET /v1/locks?holder=A")
	var list api.LockList
	if err := json.Unmarshal(a.raw, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Locks) != 2 || len(list.Edges) != 2 || !list.Edges[0].InCycle || len(list.Cycles) != 1 {
		t.Fatalf("list = %s, want a/x and a/y, the edges A→B and B→A on one cycle", a.raw)
	}
	if list.Locks[0].Queue[0].AgeMillis != 1500 || list.Locks[0].Age != 3*time.Second {
		t.Errorf("ages = %+v, want the grant's 3s and the waiter's 1500ms", list.Locks[0])
	}
}

// tableStore is a fakeStore whose table changes are signalled.
type tableStore struct {
	*fakeStore
	mu sync.Mutex
	ch chan struct{}
}

func (s *tableStore) TableChanged() (<-chan struct{}, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch, func() {}
}

func (s *tableStore) changed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

func TestUI_EventsFollowTheTable(t *testing.T) {
	s := &tableStore{fakeStore: newFakeStore("n1")}
	resp := openUIEvents(t, s)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET /ui/events: %s, %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	next := func() string {
		select {
		case l := <-lines:
			return l
		case <-time.After(10 * time.Second):
			t.Fatal("no event line within 10s")
		}
		return ""
	}
	if l := next(); !strings.HasPrefix(l, "retry: ") {
		t.Fatalf("first line %q, want the retry", l)
	}
	for range 3 {
		for l := next(); l != ""; l = next() {
		}
		s.changed()
		if l := next(); l != "data: changed" {
			t.Fatalf("after a change: %q, want data: changed", l)
		}
	}
}

// A verified client certificate signs in to the page as it does to the
// API, with its credential's role and prefixes.
func TestUI_ClientCertificateSignsIn(t *testing.T) {
	set := roleSet(t, "alice client a/ cn:alice")
	s := newFakeStore("n1")
	s.locks["a/x"] = &api.Lock{Key: "a/x", Owner: "o", Fence: 1, Remaining: time.Minute}
	s.locks["b/y"] = &api.Lock{Key: "b/y", Owner: "o", Fence: 2, Remaining: time.Minute}
	h := newHandler(s, httpapi.Options{NodeID: "n1", Credentials: func() *access.Set { return set }})
	a := serve(h, httpRequestWithCN(t, "GET", "/ui", "", "alice"))
	mustStatus(t, a, http.StatusOK, "GET /ui with alice's certificate")
	if body := string(a.raw); !strings.Contains(body, "a/x") || strings.Contains(body, "b/y") || !strings.Contains(body, "alice") {
		t.Errorf("alice's page: want a/x, not b/y, signed in as alice:\n%s", body)
	}
	mustStatus(t, serve(h, httpRequestWithCN(t, "GET", "/ui", "", "mallory")), http.StatusUnauthorized, "GET /ui with an unknown certificate")
}

// An age the node does not know (a/y's grant and its waiter A) is shown
// as unknown with the reason in a title, not as a blank or a dash that
// reads like no time at all.
func TestUI_UnknownAgeSaysWhy(t *testing.T) {
	h, _ := uiNode(t)
	a := do(h, "GET", "/ui", "", "Authorization", basic(tokOperator))
	mustStatus(t, a, http.StatusOK, "GET /ui as operator")
	row := regexp.MustCompile(`(?s)<tr data-key="a/y"[^>]*>.*?</tr>`).FindString(string(a.raw))
	const why = `title="Not known: it began before node n1 started or last installed a snapshot of the lock table, which does not record when."`
	if strings.Count(row, why) != 2 || !strings.Contains(row, ">unknown<") || !strings.Contains(row, ">age unknown<") {
		t.Errorf("a/y's row does not say why its grant's and its waiter's ages are unknown (%s):\n%s", why, row)
	}
	if x := regexp.MustCompile(`(?s)<tr data-key="a/x"[^>]*>.*?</tr>`).FindString(string(a.raw)); strings.Contains(x, "unknown") {
		t.Errorf("a/x's ages are known, but its row says unknown:\n%s", x)
	}
}
