package lock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/cluster"
	"github.com/zerotal/lock/cluster/clustertest"
	"github.com/zerotal/lock/internal/testkit/realbackends"
	"github.com/zerotal/lock/internal/testkit/testtls"
)

// startTLSNode starts a one-node cluster with mutual TLS and returns its
// host:port and the CA.
func startTLSNode(t *testing.T) (string, *testtls.CA) {
	t.Helper()
	ca := testtls.NewCA(t, "cluster")
	pair := ca.Issue(t, "n1")
	c := clustertest.Start(t, 1, func(c *cluster.Config) {
		c.ClusterID = "tls-test"
		c.TLS = cluster.TLSConfig{CertFile: pair.CertFile, KeyFile: pair.KeyFile, CAFile: ca.File, RequireClientCert: true}
	})
	return c.Addrs()[0], ca
}

// lock.Open reaches a mutual-TLS cluster from the environment alone:
// LOCKCLUSTER_ENDPOINTS, LOCKCLUSTER_TLS_CA, LOCKCLUSTER_TLS_CERT,
// LOCKCLUSTER_TLS_KEY and LOCKCLUSTER_CLUSTER_ID.
func TestOpen_ClusterOverMutualTLSFromEnv(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster node")
	}
	addr, ca := startTLSNode(t)
	app := ca.Issue(t, "app")
	t.Setenv(lock.EnvDriver, "")
	t.Setenv(lock.EnvEndpoints, addr)
	t.Setenv(lock.EnvTLSCA, ca.File)
	t.Setenv(lock.EnvTLSCert, app.CertFile)
	t.Setenv(lock.EnvTLSKey, app.KeyFile)
	t.Setenv(lock.EnvClusterID, "tls-test")
	cfg, err := lock.ConfigFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Driver != "cluster" || cfg.Cluster.CAFile != ca.File || cfg.Cluster.CertFile != app.CertFile ||
		cfg.Cluster.KeyFile != app.KeyFile || cfg.Cluster.ClusterID != "tls-test" {
		t.Fatalf("ConfigFromEnv = %v", cfg)
	}
	m := realbackends.Open(t, cfg)
	ran := false
	if err := m.Try(t.Context(), "tls-job", 5*time.Second, func(context.Context, *lock.Lock) error {
		ran = true
		return nil
	}); err != nil || !ran {
		t.Fatalf("Try over mutual TLS: ran %v, err %v", ran, err)
	}

	// Without the client certificate Open fails, with a TLS error that says
	// what to set.
	cfg.Cluster.CertFile, cfg.Cluster.KeyFile = "", ""
	m2, err := lock.Open(t.Context(), cfg)
	if m2 != nil || !errors.Is(err, client.ErrTLS) || !strings.Contains(err.Error(), "LOCKCLUSTER_TLS_CERT") {
		t.Fatalf("without a client certificate: %v, want client.ErrTLS naming LOCKCLUSTER_TLS_CERT", err)
	}
}

// A certificate without its key is a configuration error, and the
// configuration prints the file names but never the token.
func TestConfig_ClusterTLSFields(t *testing.T) {
	cfg := lock.Config{Driver: "cluster", Cluster: lock.ClusterConfig{Addrs: []string{"h:1"}, Token: secret, CertFile: "app.pem"}}
	if err := cfg.Validate(); !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), "KeyFile") {
		t.Fatalf("Validate = %v, want ErrInvalid naming KeyFile", err)
	}
	cfg.Cluster.KeyFile, cfg.Cluster.CAFile = "app-key.pem", "ca.pem"
	s := cfg.String()
	for _, want := range []string{"app.pem", "app-key.pem", "ca.pem"} {
		if !strings.Contains(s, want) {
			t.Errorf("String() = %s lacks %s", s, want)
		}
	}
	if strings.Contains(s, secret) {
		t.Errorf("String() = %s shows the token", s)
	}
}
