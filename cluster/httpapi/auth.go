package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"

	"github.com/zerotal/lock/api"
)

// auth checks the bearer token when one is configured, then the cluster
// ID a request may name (api.HeaderClusterID). The token is compared as
// SHA-256 digests, so the time taken depends neither on where the first
// wrong byte is nor on the token's length.
func (h *handler) auth(next http.Handler) http.Handler {
	next = h.checkClusterID(next)
	if h.opts.Token == "" {
		return next
	}
	want := sha256.Sum256([]byte(api.Bearer(h.opts.Token)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := sha256.Sum256([]byte(r.Header.Get(api.HeaderAuthorization)))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="lockcluster"`)
			writeError(w, errUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
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
