package client

import (
	"context"
	"net/http"
	"time"

	"github.com/zerotal/lock/api"
)

// AcquireError sends one acquire without a wait and returns the error as
// the client builds it, where Acquire turns a 409 into ok=false.
func (c *Client) AcquireError(ctx context.Context, key, owner string, ttl time.Duration) error {
	return c.call(ctx, request{op: "acquire", method: http.MethodPost, path: api.PathAcquire, key: key,
		body: api.AcquireRequest{Key: key, Owner: owner, TTLMillis: api.Millis(ttl)}}, nil)
}

// Streams is the number of API streams the client holds open.
func (c *Client) Streams() int {
	if c.stream == nil {
		return 0
	}
	c.stream.mu.Lock()
	defer c.stream.mu.Unlock()
	return len(c.stream.conns)
}

// StreamsOpened is the number of API streams the client has opened.
func (c *Client) StreamsOpened() int64 {
	if c.stream == nil {
		return 0
	}
	return c.stream.opened.Load()
}

// EndStreamUnderARequest ends the client's one open stream as if it had
// been closed just after a request found it: the stream stays in the
// client's table, ended.
func (c *Client) EndStreamUnderARequest(err error) {
	c.stream.mu.Lock()
	var sc *streamConn
	for _, s := range c.stream.conns {
		sc = s
	}
	c.stream.mu.Unlock()
	sc.fail(err)
	c.stream.mu.Lock()
	c.stream.conns[sc.key] = sc
	c.stream.mu.Unlock()
}

// IsSuspect reports whether the client takes its first node to be silent.
func (c *Client) IsSuspect() bool { return c.isSuspect(c.bases[0]) }
