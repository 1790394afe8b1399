package client_test

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/internal/testkit/testtls"
)

// A node that requires a client certificate may cut the connection of a
// client without one before that client reads its TLS alert: under TLS 1.3
// the client's handshake is over first, and the request's write meets a
// reset or a broken pipe. That is the same refusal, and the client says so
// (ErrTLS with the mutual-TLS hint), not "node unreachable" to be retried.
// The listener here asks for a certificate and, given none, resets the
// connection without an alert, every time.
func TestTLS_ANodeThatCutsAClientWithoutACertificateIsATLSRefusal(t *testing.T) {
	ca := testtls.NewCA(t, "c")
	node := ca.Issue(t, "node", "127.0.0.1")
	cert, err := tls.LoadX509KeyPair(node.CertFile, node.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, protos := range [][]string{nil, {"h2", "http/1.1"}} {
		t.Run(fmt.Sprint(protos), func(t *testing.T) { cutWithoutCertificate(t, ca, cert, protos) })
	}
}

// cutWithoutCertificate runs a listener that asks for a client
// certificate, offering protos (ALPN), and resets a connection that
// brings none; a client without one must be told of the refusal.
func cutWithoutCertificate(t *testing.T, ca *testtls.CA, cert tls.Certificate, protos []string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			raw, err := ln.Accept()
			if err != nil {
				return
			}
			conn := tls.Server(raw, &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequestClientCert, NextProtos: protos})
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			if err := conn.Handshake(); err == nil && len(conn.ConnectionState().PeerCertificates) == 0 {
				_ = raw.(*net.TCPConn).SetLinger(0) // a reset, no alert
			}
			_ = raw.Close()
		}
	}()

	c, err := client.New(client.Config{Addrs: []string{"https://" + ln.Addr().String()}, CAFile: ca.File, Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _, err = driverstest.Take(t.Context(), c, "k", "o", time.Minute)
	if !errors.Is(err, client.ErrTLS) || !strings.Contains(err.Error(), "refused this client's certificate") {
		t.Fatalf("Acquire = %v; want ErrTLS saying the node refused this client's certificate", err)
	}
}
