package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/zerotal/lock/drivers"
)

// request is one API call, described once and sent as many times as
// failover needs.
type request struct {
	op     string     // name for errors: "acquire", "release" ...
	method string     // http.MethodGet or http.MethodPost
	path   string     // "/v1/acquire"
	query  url.Values // GET parameters
	body   any        // JSON body for POST
	// wait is how long the server may hold the request (wait_ms); it is
	// added to the time budget of the call and of each attempt.
	wait time.Duration
}

// maxRounds bounds how many times a call walks the list of nodes; the
// time budget (Config.Timeout) normally ends the walk first, since the
// pause between rounds grows to 500ms.
const maxRounds = 64

// maxRedirects bounds the 307 hops one call follows.
const maxRedirects = 4

// call sends r to the cluster, failing over across nodes on connection
// errors and 503 answers, and decodes a 2xx body into out (nil: discard).
// Other non-2xx answers come back as *APIError at once. When every try
// failed, the error matches drivers.ErrUnavailable. If ctx ends, the error
// wraps ctx.Err().
func (c *Client) call(ctx context.Context, r request, out any) error {
	if c.closed.Load() {
		return fmt.Errorf("client: %s: %w", r.op, drivers.ErrClosed)
	}
	var body []byte
	if r.body != nil {
		b, err := json.Marshal(r.body)
		if err != nil {
			return fmt.Errorf("client: %s: encode request: %w", r.op, err)
		}
		body = b
	}
	budget, cancel := context.WithTimeout(ctx, c.cfg.Timeout+r.wait)
	defer cancel()

	var lastErr error
	backoff := 20 * time.Millisecond
	redirects := 0
	for round := 0; round < maxRounds; round++ {
		if round > 0 {
			// Every node failed: an election is probably under way.
			// Pause, then ask who leads now.
			if err := pause(budget, backoff); err != nil {
				break
			}
			backoff = min(backoff*2, 500*time.Millisecond)
			c.stale.Store(true)
		}
		cands := c.candidates(budget)
		for i := 0; i < len(cands); i++ {
			base := cands[i]
			err := c.attempt(ctx, budget, base, r, body, out)
			if err == nil {
				if i > 0 || redirects > 0 {
					// A node other than the preferred one answered: it may
					// be a forwarding follower; look the leader up next time.
					c.preferred.Store(&base)
					c.stale.Store(true)
				}
				return nil
			}
			if ctx.Err() != nil {
				return fmt.Errorf("client: %s: %w", r.op, ctx.Err())
			}
			var redir *redirectError
			if errors.As(err, &redir) && redirects < maxRedirects {
				redirects++
				cands = append(cands[:i+1], append([]string{redir.base}, cands[i+1:]...)...)
				continue
			}
			if !retryable(err) {
				return fmt.Errorf("client: %s: %w", r.op, err)
			}
			lastErr = err
			c.log.Debug("request failed, trying another node", "op", r.op, "node", base, "error", err)
			if budget.Err() != nil {
				break
			}
		}
		if budget.Err() != nil {
			break
		}
	}
	if lastErr == nil {
		lastErr = errors.New("no node answered within the timeout")
	}
	return drivers.Unavailable(r.op, lastErr)
}

// attempt sends r once to base. The per-attempt timeout leaves time to try
// another node when this one hangs.
func (c *Client) attempt(ctx, budget context.Context, base string, r request, body []byte, out any) error {
	actx, cancel := context.WithTimeout(budget, r.wait+max(c.cfg.Timeout/2, time.Second))
	defer cancel()
	u := base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(actx, r.method, u, rd)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	if c.cfg.ClusterID != "" {
		req.Header.Set(clusterIDHeader, c.cfg.ClusterID)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if tlsErr := tlsFailure(base, err); tlsErr != nil {
			return tlsErr
		}
		if ctx.Err() == nil && actx.Err() != nil {
			return &transportError{err: fmt.Errorf("%s %s: no answer in time", r.method, base)}
		}
		return &transportError{err: err}
	}
	defer func() {
		// Drain a little so the connection goes back to the pool.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
	}()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		if out == nil {
			return nil
		}
		if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(out); err != nil {
			return fmt.Errorf("decode %s answer: %w", r.path, err)
		}
		return nil
	case resp.StatusCode == http.StatusTemporaryRedirect || resp.StatusCode == http.StatusPermanentRedirect:
		loc, err := resp.Location()
		if err != nil {
			return &APIError{StatusCode: resp.StatusCode, Code: "unavailable", Message: "redirect without a usable Location"}
		}
		return &redirectError{base: loc.Scheme + "://" + loc.Host}
	}
	return readAPIError(resp)
}

// readAPIError decodes the {code, message} body of a non-2xx answer.
func readAPIError(resp *http.Response) error {
	e := &APIError{StatusCode: resp.StatusCode}
	var eb errorBody
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if json.Unmarshal(raw, &eb) == nil {
		e.Code, e.Message = eb.Code, eb.Message
	} else {
		e.Message = string(bytes.TrimSpace(raw))
		if len(e.Message) > 200 {
			e.Message = e.Message[:200]
		}
		if resp.StatusCode == http.StatusBadRequest && strings.Contains(e.Message, "HTTP request to an HTTPS server") {
			// net/http's own answer on a TLS port: say what to change.
			return fmt.Errorf("%w: the node serves https: use an https:// address or set CAFile (LOCK_CLUSTER_CA): %w", ErrTLS, e)
		}
	}
	return e
}

// transportError is a failure to exchange a request with one node
// (refused, reset, timed out): another node may do better.
type transportError struct{ err error }

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// redirectError carries a 307's target back to the failover loop.
type redirectError struct{ base string }

func (e *redirectError) Error() string { return "redirected to " + e.base }

// retryable reports whether err may go better on another node (a
// redirect is one only once too many were followed).
func retryable(err error) bool {
	var te *transportError
	var re *redirectError
	if errors.As(err, &te) || errors.As(err, &re) {
		return true
	}
	var ae *APIError
	return errors.As(err, &ae) && ae.retryElsewhere()
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
