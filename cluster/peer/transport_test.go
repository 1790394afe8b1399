package peer

import (
	"crypto/x509"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zerotal/lock/internal/testkit/testtls"
)

// loadT loads the TLS material of a certificate of ca for hosts.
func loadT(t *testing.T, ca *testtls.CA, name string, hosts ...string) *TLS {
	t.Helper()
	p := ca.Issue(t, name, hosts...)
	m, err := LoadTLS(TLSConfig{CertFile: p.CertFile, KeyFile: p.KeyFile, CAFile: ca.File}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Config.DialAddr sends a connection elsewhere (a test's proxy), and TLS
// still verifies the peer under the address raft dialled: a certificate
// for peer.test serves peer.test:7000 whatever socket carries it, and
// not other.test:7000.
func TestStreamLayer_DialAddrRedirectsAndTLSVerifiesThePeer(t *testing.T) {
	ca := testtls.NewCA(t, "cluster")
	acceptorTLS := loadT(t, ca, "acceptor", "peer.test")
	refusals := make(chan error, 8)
	a, err := NewStreamLayer(Config{Bind: "127.0.0.1:0", ServerTLS: acceptorTLS.PeerServer, ClientTLS: acceptorTLS.PeerClient, ClusterID: "c",
		OnRefuse: func(err error) { refusals <- err }})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	target := a.Addr().String()
	var dialled []string
	dialerTLS := loadT(t, ca, "dialer")
	d, err := NewStreamLayer(Config{Bind: "127.0.0.1:0", ServerTLS: dialerTLS.PeerServer, ClientTLS: dialerTLS.PeerClient, ClusterID: "c",
		DialAddr: func(addr string) string {
			dialled = append(dialled, addr)
			return target
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	dial := func(addr string) (acceptErr, dialErr error) {
		accepted := acceptOne(a, refusals, 2)
		out, dialErr := d.Dial(raft.ServerAddress(addr), 5*time.Second)
		if dialErr == nil {
			defer out.Close()
			if _, err := out.Write([]byte("ok")); err != nil {
				t.Fatal(err)
			}
		}
		return <-accepted, dialErr
	}
	if aErr, dErr := dial("peer.test:7000"); aErr != nil || dErr != nil {
		t.Fatalf("peer.test through the redirect: acceptor %v, dialer %v", aErr, dErr)
	}
	_, dErr := dial("other.test:7000")
	var hostErr x509.HostnameError
	if !errors.As(dErr, &hostErr) {
		t.Fatalf("other.test through the redirect: dialer %v, want a certificate name mismatch", dErr)
	}
	if strings.Join(dialled, " ") != "peer.test:7000 other.test:7000" {
		t.Fatalf("DialAddr saw %q", dialled)
	}
}

// Close cuts the peers' connections, and Drained waits until the server
// of each (raft's goroutine, answering heartbeats with writes to the
// stable store) has returned and closed it: a node closes its stores
// only then.
func TestStreamLayer_DrainedWaitsForTheConnectionsServers(t *testing.T) {
	a, err := NewStreamLayer(Config{Bind: "127.0.0.1:0", ClusterID: "c"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewStreamLayer(Config{Bind: "127.0.0.1:0", ClusterID: "c"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	finish := make(chan struct{}) // the server's work in progress (a heartbeat being answered)
	readFailed, served, accepted := make(chan error, 1), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(served)
		in, err := a.Accept()
		if err != nil {
			readFailed <- err
			return
		}
		close(accepted)
		_, err = in.Read(make([]byte, 1)) // blocks: the dialer sends nothing
		readFailed <- err
		<-finish
		_ = in.Close()
	}()
	out, err := d.Dial(raft.ServerAddress(a.Addr().String()), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	// Dial returns once the acceptor has answered the handshake, which
	// is before the connection is handed to Accept: a layer closed in
	// between drops it, and nobody serves it. Close once it is served.
	select {
	case <-accepted:
	case err := <-readFailed:
		t.Fatalf("Accept: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("the handshaken connection was not handed to Accept")
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-readFailed:
		if err == nil {
			t.Fatal("the server's read succeeded on a cut connection")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("closing the layer did not cut the accepted connection")
	}
	select {
	case <-a.Drained():
		t.Fatal("Drained before the connection's server returned")
	default:
	}
	close(finish)
	select {
	case <-a.Drained():
	case <-time.After(5 * time.Second):
		t.Fatal("Drained did not close once the server closed its connection")
	}
	<-served
}
