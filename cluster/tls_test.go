package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/internal/testkit/testtls"
)

// tlsFiles are a throwaway CA and one certificate per node, all for
// 127.0.0.1.
type tlsFiles struct {
	ca    *testtls.CA
	nodes map[string]testtls.Pair
}

func newTLSFiles(t *testing.T, ids ...string) tlsFiles {
	t.Helper()
	f := tlsFiles{ca: testtls.NewCA(t, "cluster"), nodes: map[string]testtls.Pair{}}
	for _, id := range ids {
		f.nodes[id] = f.ca.Issue(t, id)
	}
	return f
}

// config returns the node's TLS settings.
func (f tlsFiles) config(id string, clientAuth bool) TLSConfig {
	p := f.nodes[id]
	return TLSConfig{CertFile: p.CertFile, KeyFile: p.KeyFile, CAFile: f.ca.File, RequireClientCert: clientAuth}
}

// httpsClient trusts roots and presents cert (nil: none).
func httpsClient(t *testing.T, roots *x509.CertPool, cert *testtls.Pair) *http.Client {
	t.Helper()
	tc := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if cert != nil {
		c, err := tls.LoadX509KeyPair(cert.CertFile, cert.KeyFile)
		if err != nil {
			t.Fatal(err)
		}
		tc.Certificates = []tls.Certificate{c}
	}
	tr := &http.Transport{TLSClientConfig: tc}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

func caPool(t *testing.T, file string) *x509.CertPool {
	t.Helper()
	pem, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("no certificate in the CA file")
	}
	return pool
}

// postJSON posts body to url and decodes the answer's JSON object.
func postJSON(hc *http.Client, url string, body any) (int, map[string]any, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	resp, err := hc.Post(url, "application/json", strings.NewReader(string(raw)))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out := map[string]any{}
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &out)
	return resp.StatusCode, out, nil
}

// A three-node cluster whose API (mutual TLS) and raft both run over TLS:
// nodes join over https presenting their certificates, replicate over
// mutual TLS, and a follower forwards to the leader over https.
func TestTLS_ThreeNodeClusterOverTLS(t *testing.T) {
	files := newTLSFiles(t, "n1", "n2", "n3")
	// TLS alone authenticates raft: no raft secret.
	nodes := startCluster(t, 3, func(c *Config) { c.TLS, c.RaftSecret = files.config(c.ID, true), "" })
	leader := waitLeader(t, nodes)
	app := files.ca.Issue(t, "app")
	hc := httpsClient(t, caPool(t, files.ca.File), &app)

	for i, n := range followers(nodes, leader) {
		status, body, err := postJSON(hc, "https://"+n.HTTPAddr()+"/v1/acquire",
			map[string]any{"key": fmt.Sprintf("tls-%d", i), "owner": "o", "ttl_ms": 60_000})
		if err != nil || status != http.StatusOK {
			t.Fatalf("acquire through follower %s: status %d, body %v, err %v", n.ID(), status, body, err)
		}
		if f, _ := body["fence"].(float64); f <= 0 {
			t.Fatalf("no fence in %v", body)
		}
	}
	// Replication over the TLS raft transport reached every node.
	last := leader.raft.LastIndex()
	waitFor(t, 10*time.Second, "every node to apply the leader's log", func() bool {
		for _, n := range nodes {
			if n.fsm.AppliedIndex() < last {
				return false
			}
		}
		return true
	})

	// Plain HTTP to a TLS node is refused, not served.
	resp, err := http.Get("http://" + leader.HTTPAddr() + "/v1/status")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("plain HTTP to a TLS node: status %d, want 400", resp.StatusCode)
		}
	}
	// The raft port refuses a TLS client without a certificate of the CA.
	if err := dialRaftTLS(leader.RaftAddr(), caPool(t, files.ca.File), nil); err == nil {
		t.Fatal("raft port accepted a peer without a client certificate")
	}
	other := testtls.NewCA(t, "other").Issue(t, "intruder")
	if err := dialRaftTLS(leader.RaftAddr(), caPool(t, files.ca.File), &other); err == nil {
		t.Fatal("raft port accepted a peer certified by another CA")
	}
	own := files.nodes["n1"]
	if err := dialRaftTLS(leader.RaftAddr(), caPool(t, files.ca.File), &own); err != nil {
		t.Fatalf("raft port refused a peer certified by the cluster's CA: %v", err)
	}
}

// dialRaftTLS completes a TLS handshake with a raft port and reads once,
// which surfaces a refusal of the client certificate under TLS 1.3.
func dialRaftTLS(addr string, roots *x509.CertPool, cert *testtls.Pair) error {
	tc := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if cert != nil {
		c, err := tls.LoadX509KeyPair(cert.CertFile, cert.KeyFile)
		if err != nil {
			return err
		}
		tc.Certificates = []tls.Certificate{c}
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, tc)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond)); err != nil {
		return err
	}
	_, err = conn.Read(make([]byte, 1))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return nil // the server kept the connection open: accepted
	}
	if err == nil {
		return nil
	}
	return err
}

// With RequireClientCert the API refuses a client without a certificate
// and serves one with a certificate of the CA.
func TestTLS_MutualTLSRequiresClientCertificate(t *testing.T) {
	files := newTLSFiles(t, "n1")
	nodes := startCluster(t, 1, func(c *Config) { c.TLS = files.config(c.ID, true) })
	url := "https://" + nodes[0].HTTPAddr() + "/v1/acquire"
	body := map[string]any{"key": "m", "owner": "o", "ttl_ms": 1000}

	if _, _, err := postJSON(httpsClient(t, caPool(t, files.ca.File), nil), url, body); err == nil {
		t.Fatal("a client without a certificate was served")
	}
	clientCert := files.ca.Issue(t, "app")
	status, out, err := postJSON(httpsClient(t, caPool(t, files.ca.File), &clientCert), url, body)
	if err != nil || status != http.StatusOK {
		t.Fatalf("client with a certificate: status %d, body %v, err %v", status, out, err)
	}
	// A client that does not trust the cluster's CA fails the handshake.
	if _, _, err := postJSON(httpsClient(t, x509.NewCertPool(), &clientCert), url, body); err == nil ||
		!strings.Contains(err.Error(), "certificate") {
		t.Fatalf("client without the CA: err %v, want a certificate error", err)
	}
}

// With client certificates required on the API, a probe and a Prometheus
// scraper that have none reach /healthz, /readyz and /metrics on the
// health listener (Config.HealthAddr), in plain HTTP; the lock API is not
// served there.
func TestTLS_HealthListenerServesProbesWithoutACertificate(t *testing.T) {
	files := newTLSFiles(t, "n1")
	nodes := startCluster(t, 1, func(c *Config) {
		c.TLS = files.config(c.ID, true)
		c.HealthAddr = "127.0.0.1:0"
	})
	base := "http://" + nodes[0].HealthAddr()
	for path, want := range map[string]string{"/healthz": "ok", "/readyz": `"ready":true`, "/metrics": "zerotal_lock_"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), want) {
			t.Errorf("GET %s on the health listener: %d %.200q; want 200 and %q", path, resp.StatusCode, b, want)
		}
	}
	resp, err := http.Post(base+"/v1/acquire", "application/json", strings.NewReader(`{"key":"k","owner":"o","ttl_ms":1000}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /v1/acquire on the health listener: %d; the lock API must not be served there", resp.StatusCode)
	}
}

// Unreadable TLS files stop NewNode with an error that names the file.
func TestTLS_BadFilesNameTheFile(t *testing.T) {
	files := newTLSFiles(t, "n1")
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	cases := []struct {
		name    string
		mod     func(*TLSConfig)
		mention string
	}{
		{"missing cert", func(c *TLSConfig) { c.CertFile = missing }, missing},
		{"garbage key", func(c *TLSConfig) { c.KeyFile = garbage }, garbage},
		{"missing CA", func(c *TLSConfig) { c.CAFile = missing }, missing},
		{"garbage CA", func(c *TLSConfig) { c.CAFile = garbage }, garbage},
		{"no CA", func(c *TLSConfig) { c.CAFile = "" }, "CAFile"},
		{"client auth alone", func(c *TLSConfig) { *c = TLSConfig{RequireClientCert: true} }, "CertFile"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, "n1")
			cfg.TLS = files.config("n1", false)
			tc.mod(&cfg.TLS)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			n, err := NewNode(ctx, cfg)
			if err == nil {
				_ = n.Shutdown(context.Background())
				t.Fatal("NewNode accepted the TLS settings")
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("error %q does not mention %q", err, tc.mention)
			}
		})
	}
}

// A renewed certificate written over the node's files is served from the
// next handshake on, without a restart.
func TestTLS_RenewedCertificateIsServedWithoutRestart(t *testing.T) {
	files := newTLSFiles(t, "n1")
	nodes := startCluster(t, 1, func(c *Config) { c.TLS = files.config(c.ID, false) })
	roots := caPool(t, files.ca.File)
	served := func() string {
		t.Helper()
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", nodes[0].HTTPAddr(),
			&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	first := served()
	renewed := files.ca.Issue(t, "n1") // same files, new certificate
	if renewed != files.nodes["n1"] {
		t.Fatalf("the renewal went to other files: %+v", renewed)
	}
	waitFor(t, 10*time.Second, "the renewed certificate to be served", func() bool { return served() != first })
	// The cluster still works over the renewed certificate.
	status, body, err := postJSON(httpsClient(t, roots, nil), "https://"+nodes[0].HTTPAddr()+"/v1/acquire",
		map[string]any{"key": "renewed", "owner": "o", "ttl_ms": 1000})
	if err != nil || status != http.StatusOK {
		t.Fatalf("acquire after renewal: %d %v %v", status, body, err)
	}
}
