package httpapi

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"sync"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/access"
)

// Sign-in to the lock page. A browser cannot be made to send a bearer
// token without a script, and a token in a URL ends up in histories and
// logs, so the page also takes the API's token as the password of HTTP
// Basic authentication (the user name is not looked at): the browser asks
// for it once and keeps it for the session, and it works without
// JavaScript. A bearer token and a verified client certificate work as
// they do for the API. The page stores nothing itself.
//
// A credential sees what GET /v1/locks shows it (the keys under its
// prefixes, other credentials' tokens hidden), and the force-release
// button only with the force-release right, for the keys its prefixes
// reach; the POST checks the same again.

// uiAuthorize admits a request to the page whose credential has the lock
// right, and passes the credential on in the request's context as
// authorize does; an unknown one is answered 401 with a Basic challenge,
// a known one without the right 403.
func (h *handler) uiAuthorize(next http.Handler) http.Handler {
	return h.checkClusterID(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := h.uiCredential(r)
		if c == nil {
			w.Header().Set("WWW-Authenticate", `Basic realm="lockcluster", charset="UTF-8"`)
			h.uiFail(w, r, http.StatusUnauthorized, "Sign in with an API token of this cluster as the password (any user name).")
			return
		}
		if !c.Can(access.RightLock) {
			h.uiRefuse(w, r, c, fmt.Sprintf("credential %q (role %s) lacks the %q right the lock page needs", c.Name, c.Role, access.RightLock))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), credKey{}, c)))
	}))
}

// uiCredential is the request's credential: the one whose token is the
// Basic password when one is given, else what the API takes (credential).
func (h *handler) uiCredential(r *http.Request) *access.Credential {
	if _, password, ok := r.BasicAuth(); ok && h.opts.Credentials != nil {
		if set := h.opts.Credentials(); set != nil {
			return set.ByToken(password)
		}
	}
	return h.credential(r)
}

// uiRefuse answers 403 and logs the refusal as the API's refusals are.
func (h *handler) uiRefuse(w http.ResponseWriter, r *http.Request, c *access.Credential, why string) {
	h.logRefusal(r, c, why)
	h.uiFail(w, r, http.StatusForbidden, "Forbidden: "+why+".")
}

// formToken is the force-release form's token for c: an HMAC of the
// credential's name under the secret the browser sends with every
// request (its Authorization header), so that a page of another site,
// which can make the browser send a form but not read this page, cannot
// forge it, and any node computes the same one; with no such header (a
// client certificate, a node without credentials) under a secret of this
// process, so the leader that wrote the page is the node that checks it
// (uiForce).
func formToken(r *http.Request, c *access.Credential) string {
	key := []byte(r.Header.Get(api.HeaderAuthorization))
	if len(key) == 0 {
		key = processSecret()
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("lockcluster ui force-release\x00" + c.Name))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

var processSecret = sync.OnceValue(func() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return b
})

// sameSite refuses a state-changing request that a browser says came
// from another origin (Sec-Fetch-Site, else Origin against Host), as
// net/http's CrossOriginProtection decides.
var sameSite = http.NewCrossOriginProtection()
