package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/access"
	"github.com/zerotal/lock/internal/testkit/testtls"
)

// rawHTTPS is a plain net/http client, as curl is: it trusts roots and
// presents cert, over HTTP/1.1 only or over HTTP/2.
func rawHTTPS(t *testing.T, roots *x509.CertPool, cert testtls.Pair, h2 bool) *http.Client {
	t.Helper()
	c, err := tls.LoadX509KeyPair(cert.CertFile, cert.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{c}, MinVersion: tls.VersionTLS12}}
	if h2 {
		tr.ForceAttemptHTTP2 = true
	} else {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{} // HTTP/1.1 only
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

// rawDo sends one request and returns its status, protocol and body.
func rawDo(hc *http.Client, method, url, body string, header map[string]string) (int, string, []byte, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return 0, "", nil, err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Proto, b, err
}

// A credential a client certificate gives (cn: in the token file) is
// served the same through every node of a cluster that TLS alone
// authenticates (no raft secret), over HTTP/1.1 and HTTP/2, before and
// after a leader change: a follower forwards it to the leader, which
// takes the follower's word for it because the connection's certificate
// is that member's. A client certificate that sends the forwarding
// headers itself names no member and is refused. Before, the leader
// checked a proof keyed by the raft secret, so without one every
// follower answered 401.
func TestTLS_CertificateCredentialThroughEveryNode(t *testing.T) {
	files := newTLSFiles(t, "n1", "n2", "n3")
	// The client's certificate names no node's host, as the recipe's
	// (scripts/tls-certs.sh) names none.
	app := files.ca.Issue(t, "app", "app.invalid")
	lines := []string{"app client jobs/ cn:app", "admin operator * cn:admin", "ops operator * sha256:" + access.HashToken(tokOperator)}
	set, err := access.Parse(strings.NewReader(strings.Join(lines, "\n")), "test")
	if err != nil {
		t.Fatal(err)
	}
	nodes := startCluster(t, 3, func(c *Config) {
		c.TLS, c.RaftSecret = files.config(c.ID, true), ""
		c.Tokens, c.Token = set, tokOperator
	})
	roots := caPool(t, files.ca.File)
	clients := map[string]*http.Client{"HTTP/1.1": rawHTTPS(t, roots, app, false), "HTTP/2.0": rawHTTPS(t, roots, app, true)}

	round := func(when string) {
		t.Helper()
		leader := waitLeader(t, nodes)
		var want []string
		for _, proto := range []string{"HTTP/1.1", "HTTP/2.0"} {
			hc := clients[proto]
			for _, n := range nodes {
				role := "follower"
				if n == leader {
					role = "leader"
				}
				key := fmt.Sprintf("jobs/%s/%s/%s", when, proto, n.ID())
				status, got, body, err := rawDo(hc, "POST", "https://"+n.HTTPAddr()+api.PathAcquire,
					fmt.Sprintf(`{"key":%q,"owner":"o","ttl_ms":60000}`, key), nil)
				if err != nil || status != http.StatusOK || got != proto {
					t.Fatalf("%s: acquire by the app certificate through %s (%s) over %s: %d %s %s, err %v",
						when, n.ID(), role, proto, status, got, body, err)
				}
				want = append(want, key)
			}
		}
		slices.Sort(want)
		for proto, hc := range clients {
			for _, n := range nodes {
				status, _, body, err := rawDo(hc, "GET", "https://"+n.HTTPAddr()+api.PathLocks+"?prefix=jobs/"+when+"/", "", nil)
				if err != nil || status != http.StatusOK {
					t.Fatalf("%s: list by the app certificate through %s over %s: %d %s, err %v", when, n.ID(), proto, status, body, err)
				}
				var list api.LockList
				if err := json.Unmarshal(body, &list); err != nil {
					t.Fatalf("%s: list through %s: %v in %s", when, n.ID(), err, body)
				}
				var keys []string
				for _, l := range list.Locks {
					keys = append(keys, l.Key)
				}
				slices.Sort(keys)
				if !slices.Equal(keys, want) {
					t.Fatalf("%s: the list through %s over %s is %v, want %v", when, n.ID(), proto, keys, want)
				}
			}
		}
		// The app certificate sending the forwarding headers itself, as
		// if a follower forwarded an operator's request, is refused.
		for _, by := range []string{"n1", "n2", "n3"} {
			status, _, body, err := rawDo(clients["HTTP/1.1"], "POST", "https://"+leader.HTTPAddr()+api.PathForceRelease,
				fmt.Sprintf(`{"key":%q}`, want[0]), map[string]string{api.HeaderCredential: "admin", api.HeaderForwardedBy: by})
			if err != nil || status != http.StatusUnauthorized {
				t.Fatalf("%s: a forged forward by %s from the app certificate: %d %s, err %v; want 401", when, by, status, body, err)
			}
		}
	}
	round("before")
	old := waitLeader(t, nodes)
	if err := old.raft.LeadershipTransfer().Error(); err != nil {
		t.Fatalf("leadership transfer: %v", err)
	}
	waitFor(t, 15*time.Second, "another leader", func() bool {
		l := waitLeader(t, nodes)
		return l != old
	})
	round("after")
}
