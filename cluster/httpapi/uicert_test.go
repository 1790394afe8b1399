package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/access"
	"github.com/zerotal/lock/cluster/httpapi"
)

// asNode serves next as node id's process: each node of a cluster is a
// process of its own, with its own secret for the form tokens of
// credentials that send no Authorization header (a client certificate).
func asNode(running *atomic.Value, id string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		running.Store(id)
		next.ServeHTTP(w, r)
	})
}

// An operator signed in by a client certificate opens the page on a
// follower, which forwards it to the leader, and force-releases from it
// through the same follower: the form token the leader wrote is checked
// where the request is served, not by the follower, whose process has
// another secret. Before, the follower refused it 403 ("the form's token
// is not this credential's"), so the button never worked there.
func TestUI_ForceReleaseByCertificateThroughAFollower(t *testing.T) {
	var running atomic.Value
	t.Cleanup(httpapi.SetFormSecret(func() []byte { return []byte("the process secret of " + running.Load().(string)) }))
	set := roleSet(t, "admin operator * cn:admin")
	creds := func() *access.Set { return set }
	leaderStore := newFakeStore("n1", "n2")
	leaderStore.locks["jobs/1"] = &api.Lock{Key: "jobs/1", Owner: "o", Fence: 3, Remaining: time.Minute}
	leader := newHandler(leaderStore, httpapi.Options{NodeID: "n1", Credentials: creds, Forwarder: memberByCN})
	srv := httptest.NewServer(overTLSAs("n2", asNode(&running, "n1", leader)))
	t.Cleanup(srv.Close)
	followerStore := newFakeStore("n1", "n2")
	followerStore.setLeader(strings.TrimPrefix(srv.URL, "http://"), nil)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	follower := asNode(&running, "n2", newHandler(followerStore, httpapi.Options{NodeID: "n2", Credentials: creds, Forwarder: memberByCN, Transport: tr}))

	page := serve(follower, httpRequestWithCN(t, "GET", "/ui", "", "admin"))
	mustStatus(t, page, http.StatusOK, "GET /ui by certificate through the follower")
	m := regexp.MustCompile(`name="token" value="([^"]+)"`).FindSubmatch(page.raw)
	if m == nil {
		t.Fatalf("no form token on the page:\n%s", page.raw)
	}
	form := url.Values{"key": {"jobs/1"}, "token": {string(m[1])}}
	a := serve(follower, httpRequestWithCN(t, "POST", "/ui/force-release", form.Encode(), "admin"))
	mustStatus(t, a, http.StatusOK, "the force-release button by certificate through the follower")
	form.Set("confirm", "yes")
	a = serve(follower, httpRequestWithCN(t, "POST", "/ui/force-release", form.Encode(), "admin"))
	mustStatus(t, a, http.StatusSeeOther, "the confirmed force-release by certificate through the follower")
	if _, held, _ := leaderStore.Get(t.Context(), "jobs/1"); held {
		t.Fatal("jobs/1 is still held after a confirmed force-release")
	}
}
