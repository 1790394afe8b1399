package httpapi_test

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/access"
	"github.com/zerotal/lock/cluster/httpapi"
)

// newHandler is the API over s.
func newHandler(s httpapi.Store, opts httpapi.Options) http.Handler {
	return httpapi.New(s, opts)
}

// answer is one answer of the handler.
type answer struct {
	status int
	header http.Header
	raw    []byte
	err    api.ErrorBody // decoded from raw when it is an error body
}

// do sends one request through h; body "" sends none.
func do(h http.Handler, method, path, body string, header ...string) answer {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return serve(h, req)
}

// mustStatus fails t unless a has status want.
func mustStatus(t *testing.T, a answer, want int, what string) {
	t.Helper()
	if a.status != want {
		t.Fatalf("%s: status %d, want %d; body %s", what, a.status, want, a.raw)
	}
}

// operator is the credentials of a node whose one token is an
// operator's, as a node's --token is.
func operator(token string) func() *access.Set {
	set, err := access.NewSet().WithOperator("--token", token)
	if err != nil {
		panic(err)
	}
	return func() *access.Set { return set }
}

// httpRequestWithCN is a request that came over TLS with a verified
// client certificate whose subject common name is cn.
func httpRequestWithCN(t *testing.T, method, path, body, cn string) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	cert := &x509.Certificate{Subject: pkix.Name{CommonName: cn}}
	req.TLS = &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{cert}}}
	return req
}

// serve sends req through h.
func serve(h http.Handler, req *http.Request) answer {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	a := answer{status: rec.Code, header: rec.Header(), raw: rec.Body.Bytes()}
	_ = json.Unmarshal(a.raw, &a.err)
	return a
}
