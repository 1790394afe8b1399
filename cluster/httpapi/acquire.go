package httpapi

import (
	"errors"
	"net/http"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/access"
	"github.com/zerotal/lock/drivers"
)

// acquire serves POST /v1/acquire, every claim: one key or a set (in one
// log entry, all or none), a mutex or a shared claim, at once or waiting.
// The credential must reach every key.
func (h *handler) acquire(w http.ResponseWriter, r *http.Request) {
	var body api.AcquireRequest
	var req Request
	raw, ok := decodeChecked(w, r, &body, func() (err error) {
		req, err = checkAcquire(r, body)
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
	done, ok := h.waitSlot(w, r, body.WaitMillis)
	if !ok {
		return
	}
	defer done()
	h.onLeader(w, r, raw, func() {
		fences, err := h.store.Acquire(r.Context(), req)
		if err != nil {
			writeError(w, err)
			return
		}
		resp := api.AcquireResponse{Key: req.Keys[0], Owner: body.Owner, Fence: fences[0], TTLMillis: body.TTLMillis}
		if body.Keys != nil {
			resp.Locks = make([]api.KeyFence, len(req.Keys))
			for i, k := range req.Keys {
				resp.Locks[i] = api.KeyFence{Key: k, Fence: fences[i]}
			}
		}
		writeJSON(w, http.StatusOK, resp)
	})
}

// checkAcquire checks the fields of r's acquire body and returns the
// request the Store is given, with the owner recorded for it.
func checkAcquire(r *http.Request, body api.AcquireRequest) (Request, error) {
	ttl, err := checkTTL(body.TTLMillis)
	if err != nil {
		return Request{}, err
	}
	if err := errors.Join(checkKeys(body), checkOwner(body.Owner)); err != nil {
		return Request{}, err
	}
	if err := checkWait(body.WaitMillis, body.KeepMillis); err != nil {
		return Request{}, err
	}
	maxHold, err := checkMaxHold(body.MaxHoldMillis)
	if err != nil {
		return Request{}, err
	}
	claim, err := claimOf(body)
	if err != nil {
		return Request{}, err
	}
	owner, err := recordedOwner(r, body.Owner)
	if err != nil {
		return Request{}, err
	}
	return Request{Keys: body.Names(), Owner: owner, TTL: ttl, Claim: claim, MaxHold: maxHold, Wait: waitOf(r, body.WaitMillis, body.KeepMillis)}, nil
}

// checkKeys checks that body names key or keys, not both, and that keys
// are 1 to api.MaxAcquireKeys distinct valid keys.
func checkKeys(body api.AcquireRequest) error {
	switch {
	case body.Keys == nil:
		return checkKey(body.Key)
	case body.Key != "":
		return invalidf("keys", "name key or keys, not both")
	case len(body.Keys) == 0 || len(body.Keys) > api.MaxAcquireKeys:
		return invalidf("keys", "%d keys; name 1 to %d", len(body.Keys), api.MaxAcquireKeys)
	}
	seen := make(map[string]struct{}, len(body.Keys))
	var errs []error
	for _, k := range body.Keys {
		if _, dup := seen[k]; dup {
			return invalidf("keys", "key %q is named twice", k)
		}
		seen[k] = struct{}{}
		errs = append(errs, checkKey(k))
	}
	return errors.Join(errs...)
}

// checkWait checks an acquire's wait_ms and keep_ms.
func checkWait(waitMillis, keepMillis int64) error {
	switch {
	case waitMillis < 0:
		return invalidf("wait_ms", "%d is negative", waitMillis)
	case keepMillis < 0:
		return invalidf("keep_ms", "%d is negative", keepMillis)
	case keepMillis > 0 && waitMillis == 0:
		return invalidf("keep_ms", "keeps the place of a wait; name wait_ms too")
	}
	return nil
}

// claimOf is the claim body names: a semaphore, a mode, or neither (a
// mutex).
func claimOf(body api.AcquireRequest) (drivers.Claim, error) {
	switch {
	case body.Semaphore > 0 && body.Mode != "":
		return drivers.Claim{}, invalidf("mode", "a semaphore has no mode; name either semaphore or mode")
	case body.Semaphore > 0:
		return drivers.Claim{Kind: drivers.Semaphore, Limit: body.Semaphore}, nil
	case body.Mode == api.ModeRead:
		return drivers.Claim{Kind: drivers.RWLock}, nil
	case body.Mode == api.ModeWrite:
		return drivers.Claim{Kind: drivers.RWLock, Write: true}, nil
	case body.Mode != "":
		return drivers.Claim{}, invalidf("mode", "%q is neither %q nor %q", body.Mode, api.ModeRead, api.ModeWrite)
	}
	return drivers.Claim{}, nil
}

// waitSlot takes a slot of the wait cap for a request that waits
// (waitMillis > 0), and hands the request's stream slot back: the wait
// cap, not the stream's slots, bounds what waits hold. When the cap is
// full it has answered 503 with Retry-After, and ok is false.
func (h *handler) waitSlot(w http.ResponseWriter, r *http.Request, waitMillis int64) (done func(), ok bool) {
	if waitMillis <= 0 {
		return func() {}, true
	}
	done = func() {}
	if h.waits != nil {
		var err error
		if done, err = h.waits.take(); err != nil {
			w.Header().Set("Retry-After", "1")
			writeError(w, err)
			return nil, false
		}
	}
	releaseRunSlot(r.Context())
	return done, true
}
