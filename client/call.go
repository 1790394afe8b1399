package client

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/zerotal/lock/api"
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
	key    string     // the key of an acquire or extend, for a 409's error
	// wait is how long the server may hold the request (wait_ms); it is
	// added to the time budget of the call and of each attempt.
	wait time.Duration
}

// maxRounds bounds how many times a call walks the list of nodes; the
// time budget (Config.Timeout) ends the walk first unless the pause
// between rounds (see pauseCap) is tiny.
const maxRounds = 1024

// pauseCap is the longest pause between two walks of the list of nodes,
// which happen while the cluster elects a leader: a tenth of the
// AttemptTimeout, so that calls resume soon after an election, and at
// least the first pause (20ms).
func (c *Client) pauseCap() time.Duration { return max(firstPause, c.cfg.AttemptTimeout/10) }

// firstPause is the pause after the first walk of the list of nodes.
const firstPause = 20 * time.Millisecond

// call sends r to the cluster, failing over across nodes on connection
// errors, silent nodes and 503 answers, and decodes a 2xx body into out
// (nil: discard). Other non-2xx answers come back as *APIError at once.
// When every try failed, the error matches drivers.ErrUnavailable, and
// also drivers.ErrOutcomeUnknown when r changes state and some try may have
// taken effect (see send). If ctx ends, the error wraps ctx.Err().
func (c *Client) call(ctx context.Context, r request, out any) error {
	_, err := c.send(ctx, r, out)
	return err
}

// send is call, and reports whether a try before the one that answered
// may have taken effect: it was sent and got no answer, or a 503, which
// the server gives also when it lost its leadership after the request
// entered its log (the request may then still commit). Only requests that
// change state (POST) count.
func (c *Client) send(ctx context.Context, r request, out any) (earlier bool, err error) {
	if c.closed.Load() {
		return false, fmt.Errorf("client: %s: %w", r.op, drivers.ErrClosed)
	}
	var body []byte
	if r.body != nil {
		b, err := json.Marshal(r.body)
		if err != nil {
			return false, fmt.Errorf("client: %s: encode request: %w", r.op, err)
		}
		body = b
	}
	budget, cancel := context.WithTimeout(ctx, c.cfg.Timeout+r.wait)
	defer cancel()
	start := time.Now()

	var lastErr error
	backoff := firstPause
	for round := 0; round < maxRounds; round++ {
		if round > 0 {
			// Every node failed: an election is probably under way.
			// Pause, then ask who leads now.
			if err := pause(budget, backoff); err != nil {
				break
			}
			backoff = min(backoff*2, c.pauseCap())
			c.stale.Store(true)
			if err := c.noLeaderSince(start); err != nil {
				// No quorum: nothing changes until nodes come back
				// (noleader.go).
				lastErr = err
				break
			}
		}
		for i, base := range c.candidates(budget) {
			sent, err := c.attempt(ctx, budget, base, r, body, out, true)
			if err == nil {
				if i > 0 {
					// A node other than the preferred one answered: it may
					// be a forwarding follower; look the leader up next time.
					c.preferred.Store(&base)
					c.stale.Store(true)
				}
				return earlier, nil
			}
			if sent && r.method == http.MethodPost && mayHaveApplied(err) {
				earlier = true
			}
			if ctx.Err() != nil {
				return earlier, cutOff(ctx, r, earlier, lastErr)
			}
			if !retryable(err) {
				return earlier, fmt.Errorf("client: %s: %w", r.op, err)
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
	if earlier {
		return true, drivers.OutcomeUnknown(r.op, lastErr)
	}
	return false, drivers.Unavailable(r.op, lastErr)
}

// cutOff is the error of a call that ctx ended. It wraps ctx.Err() and,
// when an earlier try had failed, that failure too (matching
// drivers.ErrUnavailable, or drivers.ErrOutcomeUnknown when a try may have
// taken effect): what the caller needs to tell an outage from its own
// deadline.
func cutOff(ctx context.Context, r request, earlier bool, lastErr error) error {
	switch {
	case lastErr == nil:
		return fmt.Errorf("client: %s: %w", r.op, ctx.Err())
	case earlier:
		return fmt.Errorf("client: %s: %w: %w", r.op, ctx.Err(), drivers.OutcomeUnknown(r.op, lastErr))
	default:
		return fmt.Errorf("client: %s: %w: %w", r.op, ctx.Err(), drivers.Unavailable(r.op, lastErr))
	}
}

// mayHaveApplied reports whether a try that reached a node and failed
// with err may still have taken effect there: no answer came, or a 503.
func mayHaveApplied(err error) bool {
	var te *transportError
	var ae *APIError
	return errors.As(err, &te) || (errors.As(err, &ae) && ae.retryElsewhere())
}

// attempt sends r once to base. sent reports whether the request was
// written out whole, so that the node may have acted on it.
//
// With watched set (calls, as opposed to the client's own status probes),
// a node that stays silent for Config.AttemptTimeout is given up (see
// health.go) and left out of later calls until it answers again; so is
// one the caller's ctx cut off after it had been silent that long, and
// one cut off sooner is asked for its status in the background. A node
// that shows it is alive gets up to half of Config.Timeout (plus r.wait)
// to answer.
func (c *Client) attempt(ctx, budget context.Context, base string, r request, body []byte, out any, watched bool) (sent bool, err error) {
	tctx, cancelT := context.WithTimeout(budget, r.wait+max(c.cfg.Timeout/2, time.Second))
	defer cancelT()
	actx, cancel := context.WithCancelCause(tctx)
	defer cancel(nil)
	u := base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	var w *watch
	if watched {
		w = c.watchRequest(base, cancel)
		defer w.stop()
	}
	var wrote atomic.Bool
	trace := &httptrace.ClientTrace{
		WroteRequest: func(i httptrace.WroteRequestInfo) {
			if i.Err == nil {
				wrote.Store(true)
			}
		},
		GotFirstResponseByte: func() {
			if w != nil {
				w.gotAnswer()
			}
		},
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(actx, trace), r.method, u, rd)
	if err != nil {
		return false, fmt.Errorf("build request: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	c.identify(req.Header)
	resp, err := c.http.Do(req)
	if w != nil {
		w.stop()
	}
	if err != nil {
		return wrote.Load(), c.noAnswer(ctx, tctx, actx, base, r, w, err)
	}
	if watched {
		c.clearSuspect(base)
	}
	return true, c.readAnswer(actx, base, r, resp, out)
}

// noAnswer is the error of an attempt that got no answer (err from the
// transport), after it has marked the node by what the silence says: tctx
// is the attempt's time limit, actx the attempt's own context (cancelled
// with a cause when the client abandons it), w its watch or nil.
func (c *Client) noAnswer(ctx, tctx, actx context.Context, base string, r request, w *watch, err error) error {
	if tlsErr := tlsFailure(base, err, c.certAsked.Load()); tlsErr != nil {
		return tlsErr
	}
	cause := context.Cause(actx)
	switch {
	case ctx.Err() != nil:
		if w != nil {
			// The caller gave up first; the node may still be silent.
			if w.silentFor() >= c.cfg.AttemptTimeout {
				c.suspectNode(base)
			} else {
				c.probe(base, w.sent)
			}
		}
	case abandoned(cause):
		c.stale.Store(true)
		return &transportError{err: fmt.Errorf("%s %s: %w", r.method, base, cause)}
	case tctx.Err() != nil:
		c.stale.Store(true)
		return &transportError{err: fmt.Errorf("%s %s: no answer in time", r.method, base)}
	case w != nil:
		c.suspectNode(base) // refused, reset: the node is down
	}
	return &transportError{err: err}
}

// readAnswer decodes a 2xx answer into out, or returns the error a
// non-2xx answer carries.
func (c *Client) readAnswer(actx context.Context, base string, r request, resp *http.Response, out any) error {
	defer func() {
		// Drain a little so the connection goes back to the pool.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
	}()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if out == nil {
			return nil
		}
		if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(out); err != nil {
			if cause := context.Cause(actx); abandoned(cause) {
				// Given up on just as the answer came: try elsewhere.
				return &transportError{err: fmt.Errorf("%s %s: %w", r.method, base, cause)}
			}
			return fmt.Errorf("decode %s answer: %w", r.path, err)
		}
		return nil
	}
	// Nodes forward to the leader themselves and never redirect: a 3xx is
	// an error like any other non-2xx answer.
	return readAPIError(resp, r.key)
}

// identify sets what every request of the client carries: the bearer
// token and the cluster ID, when set.
func (c *Client) identify(h http.Header) {
	if c.auth != "" {
		h.Set(api.HeaderAuthorization, c.auth)
	}
	if c.cfg.ClusterID != "" {
		h.Set(api.HeaderClusterID, c.cfg.ClusterID)
	}
}

// readAPIError decodes the {code, message} body of a non-2xx answer to a
// request about key ("" for none).
func readAPIError(resp *http.Response, key string) error {
	e := &APIError{StatusCode: resp.StatusCode}
	var eb api.ErrorBody
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
			return fmt.Errorf("%w: the node serves https: use an https:// address or set CAFile (LOCKCLUSTER_TLS_CA): %w", ErrTLS, e)
		}
	}
	if e.kind() == api.CodeNotAcquired {
		e.notAcquired = &drivers.NotAcquiredError{Key: cmp.Or(eb.Key, key)}
		if eb.HolderTTLMillis != nil && *eb.HolderTTLMillis > 0 {
			e.notAcquired.HolderTTL = api.Duration(*eb.HolderTTLMillis)
		}
		e.notAcquired.Holder = eb.Holder
	}
	return e
}

// transportError is a failure to exchange a request with one node
// (refused, reset, timed out): another node may do better.
type transportError struct{ err error }

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// retryable reports whether err may go better on another node.
func retryable(err error) bool {
	var te *transportError
	if errors.As(err, &te) {
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
