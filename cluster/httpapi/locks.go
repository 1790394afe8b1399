package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/access"
)

func (h *handler) release(w http.ResponseWriter, r *http.Request) {
	var req api.ReleaseRequest
	var owner string
	raw, ok := decodeChecked(w, r, &req, func() (err error) {
		if err = errors.Join(checkKey(req.Key), checkOwner(req.Owner)); err == nil {
			owner, err = recordedOwner(r, req.Owner)
		}
		return err
	})
	if !ok {
		return
	}
	h.serveKey(w, r, raw, access.RightLock, req.Key, func(ctx context.Context) (any, error) {
		released, err := h.store.Release(ctx, req.Key, owner)
		return api.ReleaseResponse{Released: released}, err
	})
}

func (h *handler) extend(w http.ResponseWriter, r *http.Request) {
	var req api.ExtendRequest
	var ttl time.Duration
	var owner string
	raw, ok := decodeChecked(w, r, &req, func() (err error) {
		ttl, err = checkTTL(req.TTLMillis)
		if err == nil {
			err = errors.Join(checkKey(req.Key), checkOwner(req.Owner))
		}
		if err == nil {
			owner, err = recordedOwner(r, req.Owner)
		}
		return err
	})
	if !ok {
		return
	}
	h.serveKey(w, r, raw, access.RightLock, req.Key, func(ctx context.Context) (any, error) {
		extended, err := h.store.Extend(ctx, req.Key, owner, ttl)
		return api.ExtendResponse{Extended: extended, TTLMillis: req.TTLMillis}, err
	})
}

func (h *handler) forceRelease(w http.ResponseWriter, r *http.Request) {
	var req api.ForceReleaseRequest
	raw, ok := decodeChecked(w, r, &req, func() error { return checkKey(req.Key) })
	if !ok {
		return
	}
	h.serveKey(w, r, raw, access.RightForceRelease, req.Key, func(ctx context.Context) (any, error) {
		released, err := h.store.ForceRelease(ctx, req.Key)
		return api.ReleaseResponse{Released: released}, err
	})
}

// decodeChecked decodes the body into req (decodeBody) and checks its
// fields with check. On failure it has answered, and ok is false.
func decodeChecked(w http.ResponseWriter, r *http.Request, req any, check func() error) (raw []byte, ok bool) {
	raw, err := decodeBody(w, r, req)
	if err == nil {
		err = check()
	}
	if err != nil {
		writeError(w, err)
		return nil, false
	}
	return raw, true
}

// serveKey serves a request about key, which the credential must reach
// with right: on the leader, here or through a forward of raw, by serve,
// whose answer is written as JSON, or its error as its status.
func (h *handler) serveKey(w http.ResponseWriter, r *http.Request, raw []byte, right access.Right, key string,
	serve func(ctx context.Context) (any, error)) {
	if !h.scope(w, r, right, key) {
		return
	}
	h.onLeader(w, r, raw, func() {
		body, err := serve(r.Context())
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, body)
	})
}
