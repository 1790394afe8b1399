package httpapi

import (
	"errors"
	"net/http"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/access"
)

func (h *handler) acquire(w http.ResponseWriter, r *http.Request) {
	var req api.AcquireRequest
	raw, err := decodeBody(w, r, &req)
	if err != nil {
		writeError(w, err)
		return
	}
	ttl, err := checkTTL(req.TTLMillis)
	if err == nil {
		err = errors.Join(checkKey(req.Key), checkOwner(req.Owner))
	}
	if err == nil && req.WaitMillis < 0 {
		err = invalidf("wait_ms", "%d is negative", req.WaitMillis)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	if req.WaitMillis > 0 && h.waits != nil {
		done, err := h.waits.take()
		if err != nil {
			w.Header().Set("Retry-After", "1")
			writeError(w, err)
			return
		}
		defer done()
	}
	if req.WaitMillis > 0 {
		releaseRunSlot(r.Context()) // the wait cap, not the stream's slots, bounds what waits hold
	}
	if !h.scope(w, r, access.RightLock, req.Key) {
		return
	}
	h.onLeader(w, r, raw, func() {
		fence, err := h.store.Acquire(r.Context(), req.Key, req.Owner, ttl, api.Duration(req.WaitMillis))
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, api.AcquireResponse{Key: req.Key, Owner: req.Owner, Fence: fence, TTLMillis: req.TTLMillis})
	})
}

func (h *handler) release(w http.ResponseWriter, r *http.Request) {
	var req api.ReleaseRequest
	raw, err := decodeBody(w, r, &req)
	if err == nil {
		err = errors.Join(checkKey(req.Key), checkOwner(req.Owner))
	}
	if err != nil {
		writeError(w, err)
		return
	}
	if !h.scope(w, r, access.RightLock, req.Key) {
		return
	}
	h.onLeader(w, r, raw, func() {
		released, err := h.store.Release(r.Context(), req.Key, req.Owner)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, api.ReleaseResponse{Released: released})
	})
}

func (h *handler) extend(w http.ResponseWriter, r *http.Request) {
	var req api.ExtendRequest
	raw, err := decodeBody(w, r, &req)
	if err != nil {
		writeError(w, err)
		return
	}
	ttl, err := checkTTL(req.TTLMillis)
	if err == nil {
		err = errors.Join(checkKey(req.Key), checkOwner(req.Owner))
	}
	if err != nil {
		writeError(w, err)
		return
	}
	if !h.scope(w, r, access.RightLock, req.Key) {
		return
	}
	h.onLeader(w, r, raw, func() {
		extended, err := h.store.Extend(r.Context(), req.Key, req.Owner, ttl)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, api.ExtendResponse{Extended: extended, TTLMillis: req.TTLMillis})
	})
}

func (h *handler) forceRelease(w http.ResponseWriter, r *http.Request) {
	var req api.ForceReleaseRequest
	raw, err := decodeBody(w, r, &req)
	if err == nil {
		err = checkKey(req.Key)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	if !h.scope(w, r, access.RightForceRelease, req.Key) {
		return
	}
	h.onLeader(w, r, raw, func() {
		released, err := h.store.ForceRelease(r.Context(), req.Key)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, api.ReleaseResponse{Released: released})
	})
}
