package httpapi

import (
	"crypto/hmac"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/access"
)

// uiForce serves the force-release form of the lock page in two steps:
// the button's POST answers a confirmation page, whose POST (confirm=yes)
// frees the key through Store.ForceRelease, as POST /v1/force-release
// does, so that the holder's lost-lock signal fires, and sends the
// browser back to the table. Each POST must come from the page's own
// origin (sameSite) with the form token of its credential (formToken),
// and the credential must have the force-release right for the key.
func (h *handler) uiForce(w http.ResponseWriter, r *http.Request) {
	c := caller(r)
	if err := sameSite.Check(r); err != nil {
		h.uiRefuse(w, r, c, "a force-release must come from this page: "+err.Error())
		return
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, uiFormMaxBytes))
	if err != nil {
		h.uiFail(w, r, http.StatusRequestEntityTooLarge, "The form is too large.")
		return
	}
	form, err := url.ParseQuery(string(raw))
	if err != nil {
		h.uiFail(w, r, http.StatusBadRequest, "The form is malformed: "+err.Error())
		return
	}
	key := form.Get("key")
	if !c.Can(access.RightForceRelease) || !c.CoversKey(key) {
		h.uiRefuse(w, r, c, fmt.Sprintf("credential %q (role %s, %s) may not force-release key %q", c.Name, c.Role, c.Scope(), key))
		return
	}
	if err := checkKey(key); err != nil {
		h.uiFail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	back := url.Values{}
	for _, f := range []string{"prefix", "holder"} {
		if v := form.Get(f); v != "" {
			back.Set(f, v)
		}
	}
	h.onLeader(w, r, raw, func() {
		// The token is checked where the page that carries it was made,
		// the leader: a token of a credential without an Authorization
		// header is keyed by the process that wrote it (formToken).
		if !hmac.Equal([]byte(form.Get("token")), []byte(formToken(r, c))) {
			h.uiRefuse(w, r, c, "the form's token is not this credential's: reload the page and try again")
			return
		}
		if form.Get("confirm") != "yes" {
			v := h.uiBase(r, "Force-release")
			v.template, v.Key, v.Token, v.Prefix, v.Holder = "confirm", key, formToken(r, c), form.Get("prefix"), form.Get("holder")
			v.Back = PathUI + "?" + back.Encode()
			if l, held, err := h.store.Get(r.Context(), key); err == nil && held {
				showLock(c, &l)
				v.Victim = l.Holder
			}
			h.uiRender(w, v)
			return
		}
		if _, err := h.store.ForceRelease(r.Context(), key); err != nil {
			h.uiFail(w, r, api.StatusOf(classify(err)), "Force-release of "+key+" failed: "+err.Error())
			return
		}
		back.Set("released", key)
		http.Redirect(w, r, PathUI+"?"+back.Encode(), http.StatusSeeOther)
	})
}
