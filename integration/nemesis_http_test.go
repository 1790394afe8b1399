package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/zerotal/lock/drivers"
	"io"
	"net/http"
	"net/url"
	"time"
)

// rawAPI speaks the v1 HTTP API to one node chosen per call, with no
// failover and no retry of its own: the workload decides which node a
// request goes through, when it gives up on it (closing the connection,
// as a client timeout does) and when it retries it, and with which owner.
// The Go client cannot be made to do that precisely.
type rawAPI struct {
	http *http.Client
}

// newRawAPI returns a rawAPI whose idle connections close with t's
// cleanup (goleak then finds no transport goroutine).
func newRawAPI() *rawAPI {
	return &rawAPI{http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}
}

// Close drops the idle connections.
func (a *rawAPI) Close() { a.http.CloseIdleConnections() }

// rawAnswer is a node's answer: status 0 when none came (connection
// refused or reset, ctx ended).
type rawAnswer struct {
	status int
	body   []byte
	err    error
}

// outcome classifies an answer the way the history does: 200 ok, 409 a
// definite no, anything else unknown.
func (r rawAnswer) outcome() outcome {
	switch r.status {
	case http.StatusOK:
		return resOK
	case http.StatusConflict:
		return resFail
	}
	return resUnknown
}

// errText is the answer as a history error ("" for 200 and 409).
func (r rawAnswer) errText() string {
	switch {
	case r.err != nil:
		return shortErr(r.err)
	case r.status == http.StatusOK || r.status == http.StatusConflict:
		return ""
	}
	b := r.body
	if len(b) > 100 {
		b = b[:100]
	}
	return fmt.Sprintf("%d %s", r.status, bytes.TrimSpace(b))
}

func (a *rawAPI) do(ctx context.Context, method, addr, path string, body any) rawAnswer {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return rawAnswer{err: err}
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, rd)
	if err != nil {
		return rawAnswer{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+clientToken)
	resp, err := a.http.Do(req)
	if err != nil {
		return rawAnswer{err: err}
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return rawAnswer{err: fmt.Errorf("read answer: %w", err)}
	}
	return rawAnswer{status: resp.StatusCode, body: b}
}

// acquireAs sends one acquire through addr: of a mutex (zero claim), or
// of a shared key (semaphore or mode in the same body).
func (a *rawAPI) acquireAs(ctx context.Context, addr, key, owner string, ttl, wait time.Duration, claim drivers.Claim) (rawAnswer, uint64) {
	body := map[string]any{"key": key, "owner": owner, "ttl_ms": ttl.Milliseconds(), "wait_ms": wait.Milliseconds()}
	path := "/v1/acquire"
	switch {
	case claim.Kind == drivers.Semaphore:
		body["semaphore"] = claim.Limit
	case claim.Kind == drivers.RWLock && claim.Write:
		body["mode"] = "write"
	case claim.Kind == drivers.RWLock:
		body["mode"] = "read"
	}
	ans := a.do(ctx, http.MethodPost, addr, path, body)
	if ans.status != http.StatusOK {
		return ans, 0
	}
	var out struct {
		Fence uint64 `json:"fence"`
	}
	if err := json.Unmarshal(ans.body, &out); err != nil || out.Fence == 0 {
		return rawAnswer{status: 0, body: ans.body, err: fmt.Errorf("200 without a fence: %q", ans.body)}, 0
	}
	return ans, out.Fence
}

// release sends one release through addr; ok reports "released": true.
func (a *rawAPI) release(ctx context.Context, addr, key, owner string) (rawAnswer, bool) {
	ans := a.do(ctx, http.MethodPost, addr, "/v1/release", map[string]any{"key": key, "owner": owner})
	if ans.status != http.StatusOK {
		return ans, false
	}
	var out struct {
		Released bool `json:"released"`
	}
	if err := json.Unmarshal(ans.body, &out); err != nil {
		return rawAnswer{err: fmt.Errorf("decode release answer: %w", err)}, false
	}
	return ans, out.Released
}

// waiters is the number of owners queued for key, read through addr (0
// when the key is free or the read failed).
func (a *rawAPI) waiters(ctx context.Context, addr, key string) int {
	ans := a.do(ctx, http.MethodGet, addr, "/v1/lock?key="+url.QueryEscape(key), nil)
	if ans.status != http.StatusOK {
		return 0
	}
	var out struct {
		Waiters int `json:"waiters"`
	}
	if json.Unmarshal(ans.body, &out) != nil {
		return 0
	}
	return out.Waiters
}
