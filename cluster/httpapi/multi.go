package httpapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/access"
)

// acquireAll serves POST /v1/acquire-all: every key or none, in one log
// entry. The credential must reach every key.
func (h *handler) acquireAll(w http.ResponseWriter, r *http.Request) {
	var req api.AcquireAllRequest
	var ttl time.Duration
	var owner string
	raw, ok := decodeChecked(w, r, &req, func() (err error) {
		if ttl, err = checkAcquireAll(req); err == nil {
			owner, err = recordedOwner(r, req.Owner)
		}
		return err
	})
	if !ok {
		return
	}
	for _, k := range req.Keys {
		if !h.scope(w, r, access.RightLock, k) {
			return
		}
	}
	done, ok := h.waitSlot(w, r, req.WaitMillis)
	if !ok {
		return
	}
	defer done()
	h.onLeader(w, r, raw, func() {
		fences, err := h.store.AcquireAll(r.Context(), req.Keys, owner, ttl, waitOf(r, req.WaitMillis, req.KeepMillis))
		if err != nil {
			writeError(w, err)
			return
		}
		resp := api.AcquireAllResponse{Owner: req.Owner, TTLMillis: req.TTLMillis, Locks: make([]api.KeyFence, len(req.Keys))}
		for i, k := range req.Keys {
			resp.Locks[i] = api.KeyFence{Key: k, Fence: fences[i]}
		}
		writeJSON(w, http.StatusOK, resp)
	})
}

// checkAcquireAll checks an acquire-all's fields and returns its TTL.
func checkAcquireAll(req api.AcquireAllRequest) (time.Duration, error) {
	ttl, err := checkTTL(req.TTLMillis)
	if err != nil {
		return 0, err
	}
	if err := checkOwner(req.Owner); err != nil {
		return 0, err
	}
	if err := checkWait(req.WaitMillis, req.KeepMillis); err != nil {
		return 0, err
	}
	if len(req.Keys) == 0 || len(req.Keys) > api.MaxAcquireAllKeys {
		return 0, invalidf("keys", "%d keys; name 1 to %d", len(req.Keys), api.MaxAcquireAllKeys)
	}
	seen := make(map[string]struct{}, len(req.Keys))
	var errs []error
	for _, k := range req.Keys {
		if _, dup := seen[k]; dup {
			return 0, invalidf("keys", "key %q is named twice", k)
		}
		seen[k] = struct{}{}
		errs = append(errs, checkKey(k))
	}
	return ttl, errors.Join(errs...)
}
