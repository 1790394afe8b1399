package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
)

// ErrTLS: the TLS handshake with a node failed in a way that retrying
// cannot fix (an untrusted or mismatched certificate, a missing client
// certificate, a node that does not speak TLS). It is never retried.
var ErrTLS = errors.New("client: TLS handshake failed")

// loadTLS builds the transport's TLS configuration from cfg.TLS and the
// files; errors name the file and match drivers.ErrInvalid. Without a
// client certificate, a node's request for one sets asked: under TLS 1.3
// the handshake completes on the client's side before the node checks
// the certificate, so its refusal may reach this client only as a
// connection cut under the request (a broken pipe, a reset) rather than
// as the TLS alert, and asked tells the two apart.
func loadTLS(cfg Config, asked *atomic.Bool) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.TLS != nil {
		tc = cfg.TLS.Clone()
	}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, configError("CAFile", err.Error())
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, configError("CAFile", cfg.CAFile+" holds no PEM certificate")
		}
		tc.RootCAs = pool
	}
	if cfg.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, configError("CertFile/KeyFile", fmt.Sprintf("%s with %s: %v", cfg.CertFile, cfg.KeyFile, err))
		}
		tc.Certificates = append(tc.Certificates, cert)
	}
	if len(tc.Certificates) == 0 && tc.GetClientCertificate == nil {
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			asked.Store(true)
			return &tls.Certificate{}, nil // none: the handshake goes on without one
		}
	}
	return tc, nil
}

// tlsFailure recognises a permanent TLS failure in err (from http.Do with
// a node at base) and explains it; nil when err is something else.
// certAsked: a node asked this client for a certificate it does not have
// (loadTLS), so a connection cut under a request is that refusal.
func tlsFailure(base string, err error, certAsked bool) error {
	var (
		verify    *tls.CertificateVerificationError
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		header    tls.RecordHeaderError
		op        *net.OpError
	)
	hint := ""
	switch {
	case errors.As(err, &unknownCA):
		hint = "its certificate is not signed by a CA this client trusts (set CAFile, LOCKCLUSTER_TLS_CA)"
	case errors.As(err, &hostname):
		hint = "its certificate does not name the address dialled"
	case errors.As(err, &invalid), errors.As(err, &verify):
		hint = "its certificate does not verify"
	case errors.As(err, &header), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		hint = "it does not speak TLS (use an http:// address, or turn TLS on in the cluster)"
	case errors.As(err, &op) && op.Op == "remote error", certAsked && connCut(err):
		// A TLS alert from the node: it refused this client's handshake,
		// most often for lack of a client certificate; or, when it asked
		// for one this client has not, the connection it cut before the
		// alert was read.
		hint = "it refused this client's certificate (mutual TLS: set CertFile and KeyFile, LOCKCLUSTER_TLS_CERT and LOCKCLUSTER_TLS_KEY)"
	default:
		return nil
	}
	return fmt.Errorf("%w with %s: %s: %w", ErrTLS, base, hint, err)
}

// connCut reports an error of a connection the other end cut under a
// request: a reset, a broken pipe, an end of stream, or HTTP/2's
// connection that could not be set up (its error does not carry why).
func connCut(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		strings.Contains(err.Error(), "http2: client conn could not be established")
}
