package httpapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/access"
)

// errForbidden is the kind of every refusal of a known credential.
var errForbidden = errors.New("cluster: forbidden")

// anyRight admits any known credential (the JSON 404 and 405 of paths
// that are no endpoint).
const anyRight access.Right = ""

// credKey carries a request's credential in its context.
type credKey struct{}

// authorize admits a request whose credential has right, after the
// cluster-ID check, and passes the credential on in the request's
// context (the handlers check key prefixes with it). A request with no
// credential the node knows is answered 401; a known one without the
// right 403, naming the right, and the refusal is logged with the
// credential's name (never its secret).
//
// The credentials are read anew for every request, and every frame of an
// API stream is a request: a token removed by a reload is refused at its
// next request, also on a stream opened before.
func (h *handler) authorize(right access.Right, next http.Handler) http.Handler {
	return h.checkClusterID(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := h.credential(r)
		if c == nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="lockcluster"`)
			writeError(w, errUnauthorized)
			return
		}
		if right != anyRight && !c.Can(right) {
			h.refuse(w, r, c, fmt.Errorf("%w: credential %q (role %s) lacks the %q right that %s %s needs",
				errForbidden, c.Name, c.Role, right, r.Method, r.URL.Path))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), credKey{}, c)))
	}))
}

// credential is the request's credential: access.Open when the node has
// none configured, else the one its bearer token or its verified client
// certificate names, else nil.
func (h *handler) credential(r *http.Request) *access.Credential {
	if h.opts.Credentials == nil {
		return access.Open
	}
	set := h.opts.Credentials()
	if set == nil {
		return access.Open
	}
	if tok, ok := strings.CutPrefix(r.Header.Get(api.HeaderAuthorization), "Bearer "); ok {
		if c := set.ByToken(tok); c != nil {
			return c
		}
	}
	if name := r.Header.Get(api.HeaderCredential); name != "" {
		// A forwarded request (see forwarder.go).
		c := set.ByName(name)
		if c == nil || c.Subject == "" {
			return nil
		}
		if err := h.checkForwarder(r); err != nil {
			if h.opts.Logger != nil {
				h.opts.Logger.Warn("forwarded credential refused", "credential", name, "forwarded_by", r.Header.Get(api.HeaderForwardedBy),
					"method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "reason", err.Error())
			}
			return nil
		}
		return c
	}
	if cn := clientCN(r.TLS); cn != "" {
		return set.BySubject(cn)
	}
	return nil
}

// clientCN is the common name of a client certificate the TLS handshake
// verified against the node's CA, or "".
func clientCN(cs *tls.ConnectionState) string {
	if cs == nil || len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return ""
	}
	return cs.VerifiedChains[0][0].Subject.CommonName
}

// scope refuses a key outside the prefixes of the request's credential.
func (h *handler) scope(w http.ResponseWriter, r *http.Request, right access.Right, key string) bool {
	c, _ := r.Context().Value(credKey{}).(*access.Credential)
	if c == nil || c.CoversKey(key) {
		return true
	}
	h.refuse(w, r, c, fmt.Errorf("%w: credential %q has the %q right for %s only, not for key %q",
		errForbidden, c.Name, right, c.Scope(), key))
	return false
}

// scopePrefix refuses a list under a prefix that reaches beyond the
// credential's prefixes.
func (h *handler) scopePrefix(w http.ResponseWriter, r *http.Request, prefix string) bool {
	c, _ := r.Context().Value(credKey{}).(*access.Credential)
	if c == nil || c.CoversPrefix(prefix) {
		return true
	}
	h.refuse(w, r, c, fmt.Errorf("%w: credential %q may list %s only, not every key under %q: name one of its prefixes",
		errForbidden, c.Name, c.Scope(), prefix))
	return false
}

func (h *handler) refuse(w http.ResponseWriter, r *http.Request, c *access.Credential, err error) {
	h.logRefusal(r, c, err.Error())
	writeError(w, err)
}

// logRefusal logs a refusal of c's request r with the credential's name
// (never its secret).
func (h *handler) logRefusal(r *http.Request, c *access.Credential, reason string) {
	if h.opts.Logger != nil {
		h.opts.Logger.Warn("request refused", "credential", c.Name, "role", string(c.Role), "method", r.Method,
			"path", r.URL.Path, "remote", r.RemoteAddr, "reason", reason)
	}
}

// checkClusterID answers 403 to a request that names another cluster.
func (h *handler) checkClusterID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get(api.HeaderClusterID); id != "" && id != h.opts.ClusterID {
			writeJSON(w, http.StatusForbidden, api.ErrorBody{Code: api.CodeWrongCluster, Message: fmt.Sprintf(
				"cluster: this node (%s) is in cluster %q; the request is for cluster %q", h.opts.NodeID, h.opts.ClusterID, id)})
			return
		}
		next.ServeHTTP(w, r)
	})
}
