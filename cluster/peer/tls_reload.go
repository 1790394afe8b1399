package peer

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// certReloadInterval is how often, at most, the certificate file is
// checked for a change (one stat per interval, on a handshake).
const certReloadInterval = time.Second

// certReloader serves the node's certificate and reloads it when the
// files change, so a renewed certificate takes effect on the next
// handshake without a restart. A file that fails to load keeps the
// previous certificate in service (and is logged).
type certReloader struct {
	certFile, keyFile string
	log               *slog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	modTime time.Time
	checked time.Time
}

func newCertReloader(certFile, keyFile string, log *slog.Logger) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile, log: log}
	st, err := os.Stat(certFile)
	if err != nil {
		return nil, fmt.Errorf("cluster: TLS certificate: %w", err)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("cluster: TLS certificate %s with key %s: %w", certFile, keyFile, err)
	}
	r.cert, r.modTime, r.checked = &cert, st.ModTime(), time.Now()
	return r, nil
}

// current returns the certificate, reloaded first if the certificate or
// key file changed since it was loaded.
func (r *certReloader) current() *tls.Certificate {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.checked) < certReloadInterval {
		return r.cert
	}
	r.checked = time.Now()
	latest := r.modTime
	for _, f := range []string{r.certFile, r.keyFile} {
		st, err := os.Stat(f)
		if err != nil {
			r.log.Warn("cannot check the TLS certificate; keeping the loaded one", "file", f, "error", err)
			return r.cert
		}
		if st.ModTime().After(latest) {
			latest = st.ModTime()
		}
	}
	if !latest.After(r.modTime) {
		return r.cert
	}
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		// Often a renewal caught between writing the two files: the next
		// check retries.
		r.log.Warn("cannot reload the TLS certificate; keeping the loaded one", "cert_file", r.certFile, "error", err)
		return r.cert
	}
	r.cert, r.modTime = &cert, latest
	r.log.Info("TLS certificate reloaded", "cert_file", r.certFile)
	return r.cert
}

func (r *certReloader) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.current(), nil
}

func (r *certReloader) getClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return r.current(), nil
}
