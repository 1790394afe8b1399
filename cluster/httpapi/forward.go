package httpapi

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/access"
	"github.com/zerotal/lock/drivers"
)

// onLeader runs serve when this node serves requests that need the
// leader, and otherwise forwards r to the leader (one hop at most). raw
// is r's body as decodeBody read it (nil for a request without one): the
// leader gets exactly those bytes and decodes them itself.
func (h *handler) onLeader(w http.ResponseWriter, r *http.Request, raw []byte, serve func()) {
	addr, err := h.store.Leader(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	if addr == "" {
		serve()
		return
	}
	if by := r.Header.Get(api.HeaderForwardedBy); by != "" {
		writeError(w, drivers.Unavailable("forward", errors.New("request forwarded by "+by+" reached a node that is not the leader")))
		return
	}
	h.forward(w, r, raw, addr)
}

// forward reverse-proxies r, with raw for its body, to the leader at
// addr. The Authorization header travels with it; the leader checks it
// again. A credential a client certificate gave travels as its name, on
// this node's own connection to the leader (see forwarder.go): the
// leader sees this node's certificate, not the client's.
func (h *handler) forward(w http.ResponseWriter, r *http.Request, raw []byte, addr string) {
	cred, _ := r.Context().Value(credKey{}).(*access.Credential)
	byCert := cred != nil && cred.Subject != "" && r.Header.Get(api.HeaderCredential) == ""
	target := &url.URL{Scheme: h.opts.Scheme, Host: addr}
	if raw != nil {
		// decodeBody consumed r.Body (all of it: it refuses more than
		// MaxBodyBytes), so the bytes it read are the whole body.
		r.Body = io.NopCloser(bytes.NewReader(raw))
	} else {
		// A read, whose body no handler reads: it goes without one.
		r.Body, r.ContentLength = http.NoBody, 0
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = r.Host
			pr.Out.Header.Set(api.HeaderForwardedBy, h.opts.NodeID)
			pr.Out.Header.Del(api.HeaderCredential)
			if byCert {
				pr.Out.Header.Set(api.HeaderCredential, cred.Name)
			}
		},
		Transport: h.opts.Transport,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			writeError(w, drivers.Unavailable("forward to leader "+addr, err))
		},
	}
	rp.ServeHTTP(w, r)
}
