package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/access"
	"github.com/zerotal/lock/drivers"
)

func (h *handler) acquire(w http.ResponseWriter, r *http.Request) {
	var req api.AcquireRequest
	var ttl time.Duration
	var owner string
	raw, ok := decodeChecked(w, r, &req, func() (err error) {
		ttl, owner, err = checkAcquire(r, req)
		return err
	})
	if !ok {
		return
	}
	h.serveAcquire(w, r, raw, req, func(ctx context.Context) (uint64, error) {
		return h.store.Acquire(ctx, req.Key, owner, ttl, waitOf(r, req.WaitMillis, req.KeepMillis))
	})
}

func (h *handler) acquireShared(w http.ResponseWriter, r *http.Request) {
	var req api.AcquireSharedRequest
	var ttl time.Duration
	var claim drivers.Claim
	var owner string
	raw, ok := decodeChecked(w, r, &req, func() (err error) {
		ttl, owner, err = checkAcquire(r, req.AcquireRequest)
		if err == nil {
			claim, err = claimOf(req)
		}
		return err
	})
	if !ok {
		return
	}
	h.serveAcquire(w, r, raw, req.AcquireRequest, func(ctx context.Context) (uint64, error) {
		return h.store.AcquireShared(ctx, req.Key, owner, ttl, waitOf(r, req.WaitMillis, req.KeepMillis), claim)
	})
}

// checkAcquire checks the fields of r's acquire req and returns its TTL
// and the owner recorded for it.
func checkAcquire(r *http.Request, req api.AcquireRequest) (ttl time.Duration, owner string, err error) {
	ttl, err = checkTTL(req.TTLMillis)
	if err == nil {
		err = errors.Join(checkKey(req.Key), checkOwner(req.Owner))
	}
	if err == nil {
		err = checkWait(req.WaitMillis, req.KeepMillis)
	}
	if err == nil {
		owner, err = recordedOwner(r, req.Owner)
	}
	return ttl, owner, err
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

// claimOf is the claim a shared acquire names: a semaphore or a mode.
func claimOf(req api.AcquireSharedRequest) (drivers.Claim, error) {
	switch {
	case req.Semaphore > 0 && req.Mode != "":
		return drivers.Claim{}, invalidf("mode", "a semaphore has no mode; name either semaphore or mode")
	case req.Semaphore > 0:
		return drivers.Claim{Kind: drivers.Semaphore, Limit: req.Semaphore}, nil
	case req.Mode == api.ModeRead:
		return drivers.Claim{Kind: drivers.RWLock}, nil
	case req.Mode == api.ModeWrite:
		return drivers.Claim{Kind: drivers.RWLock, Write: true}, nil
	case req.Mode != "":
		return drivers.Claim{}, invalidf("mode", "%q is neither %q nor %q", req.Mode, api.ModeRead, api.ModeWrite)
	}
	return drivers.Claim{}, invalidf("semaphore", "name semaphore (1 or more) or mode (read or write)")
}

// serveAcquire serves a checked acquire: its slot of the wait cap when it
// waits, then acquire on the leader.
func (h *handler) serveAcquire(w http.ResponseWriter, r *http.Request, raw []byte, req api.AcquireRequest, acquire func(context.Context) (uint64, error)) {
	done, ok := h.waitSlot(w, r, req.WaitMillis)
	if !ok {
		return
	}
	defer done()
	h.serveKey(w, r, raw, access.RightLock, req.Key, func(ctx context.Context) (any, error) {
		fence, err := acquire(ctx)
		return api.AcquireResponse{Key: req.Key, Owner: req.Owner, Fence: fence, TTLMillis: req.TTLMillis}, err
	})
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
