package client_test

import (
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/cluster"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/internal/testkit/testtls"
)

// startTLSCluster starts three nodes with TLS (mutual TLS for clients when
// clientAuth) and returns their host:port addresses and the CA.
func startTLSCluster(t *testing.T, clientAuth bool, clusterID string) ([]string, *testtls.CA) {
	t.Helper()
	ca := testtls.NewCA(t, "cluster")
	addrs, _ := startClusterWith(t, func(cfg *cluster.Config) {
		pair := ca.Issue(t, cfg.ID)
		cfg.ClusterID = clusterID
		cfg.TLS = cluster.TLSConfig{CertFile: pair.CertFile, KeyFile: pair.KeyFile, CAFile: ca.File, RequireClientCert: clientAuth}
	})
	return addrs, ca
}

func newClient(t *testing.T, cfg client.Config) *client.Client {
	t.Helper()
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// With the cluster's CA the client reaches a TLS cluster through bare
// host:port addresses (https implied); without it, the handshake fails at
// once with ErrTLS and a hint, instead of failing over until the timeout.
func TestTLS_ClientAgainstTLSCluster(t *testing.T) {
	addrs, ca := startTLSCluster(t, false, "")
	ctx := t.Context()

	c := newClient(t, client.Config{Addrs: addrs, CAFile: ca.File})
	for i := range 20 {
		key := fmt.Sprintf("tls-%d", i)
		fence, ok, err := driverstest.Take(ctx, c, key, "owner", time.Minute)
		if err != nil || !ok || fence == 0 {
			t.Fatalf("acquire %s: fence %d ok %v err %v", key, fence, ok, err)
		}
		if released, err := c.Release(ctx, key, "owner"); err != nil || !released {
			t.Fatalf("release %s: %v %v", key, released, err)
		}
	}
	for _, b := range c.Addrs() {
		if !strings.HasPrefix(b, "https://") {
			t.Fatalf("address %s is not https", b)
		}
	}

	start := time.Now()
	bare := newClient(t, client.Config{Addrs: []string{"https://" + addrs[0]}, Timeout: 5 * time.Second})
	_, _, err := driverstest.Take(ctx, bare, "k", "o", time.Second)
	if !errors.Is(err, client.ErrTLS) || !strings.Contains(err.Error(), "CAFile") {
		t.Fatalf("client without the CA: %v, want ErrTLS naming CAFile", err)
	}
	t.Logf("without the CA: %v", err)
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("the TLS failure took %s: it was retried", took)
	}

	plain := newClient(t, client.Config{Addrs: []string{"http://" + addrs[0]}, Timeout: 2 * time.Second})
	_, _, err = driverstest.Take(ctx, plain, "k", "o", time.Second)
	if !errors.Is(err, client.ErrTLS) || !strings.Contains(err.Error(), "https://") {
		t.Fatalf("plain HTTP to a TLS node: %v, want ErrTLS suggesting https://", err)
	}
	t.Logf("plain HTTP: %v", err)
}

// Under mutual TLS a client without a certificate is refused with ErrTLS
// and a hint; with a certificate of the CA it is served.
func TestTLS_ClientMutualTLS(t *testing.T) {
	addrs, ca := startTLSCluster(t, true, "")
	ctx := t.Context()

	noCert := newClient(t, client.Config{Addrs: addrs, CAFile: ca.File, Timeout: 5 * time.Second})
	_, _, err := driverstest.Take(ctx, noCert, "k", "o", time.Second)
	if !errors.Is(err, client.ErrTLS) || !strings.Contains(err.Error(), "CertFile") {
		t.Fatalf("client without a certificate: %v, want ErrTLS naming CertFile", err)
	}
	t.Logf("without a certificate: %v", err)
	pair := ca.Issue(t, "app")
	c := newClient(t, client.Config{Addrs: addrs, CAFile: ca.File, CertFile: pair.CertFile, KeyFile: pair.KeyFile})
	if _, ok, err := driverstest.Take(ctx, c, "k", "o", time.Second); err != nil || !ok {
		t.Fatalf("client with a certificate: ok %v err %v", ok, err)
	}
}

// A client that names a cluster ID is refused by a node of another
// cluster, with ErrWrongCluster.
func TestTLS_ClientClusterIDMismatch(t *testing.T) {
	addrs, ca := startTLSCluster(t, false, "prod")
	ctx := t.Context()
	wrong := newClient(t, client.Config{Addrs: addrs, CAFile: ca.File, ClusterID: "staging"})
	_, _, err := driverstest.Take(ctx, wrong, "k", "o", time.Second)
	if !errors.Is(err, client.ErrWrongCluster) || !strings.Contains(err.Error(), "staging") {
		t.Fatalf("wrong cluster: %v, want ErrWrongCluster", err)
	}
	t.Logf("wrong cluster: %v", err)
	right := newClient(t, client.Config{Addrs: addrs, CAFile: ca.File, ClusterID: "prod"})
	if _, ok, err := driverstest.Take(ctx, right, "k", "o", time.Second); err != nil || !ok {
		t.Fatalf("right cluster: ok %v err %v", ok, err)
	}
}

// TLS settings are checked by New: files are read then, and errors name
// them and match ErrInvalid.
func TestTLS_ClientConfigErrors(t *testing.T) {
	ca := testtls.NewCA(t, "c")
	pair := ca.Issue(t, "app")
	missing := filepath.Join(t.TempDir(), "nope.pem")
	cases := []struct {
		name    string
		cfg     client.Config
		mention string
	}{
		{"missing CA", client.Config{Addrs: []string{"h:1"}, CAFile: missing}, missing},
		{"cert without key", client.Config{Addrs: []string{"h:1"}, CertFile: pair.CertFile}, "KeyFile"},
		{"key is not the cert's", client.Config{Addrs: []string{"h:1"}, CertFile: pair.CertFile, KeyFile: ca.File}, ca.File},
		{"TLS with HTTPClient", client.Config{Addrs: []string{"h:1"}, CAFile: ca.File, HTTPClient: &http.Client{}}, "HTTPClient"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := client.New(tc.cfg)
			if err == nil {
				_ = c.Close()
				t.Fatal("New accepted the configuration")
			}
			if !errors.Is(err, drivers.ErrInvalid) || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("error %q: want ErrInvalid mentioning %q", err, tc.mention)
			}
		})
	}
}
