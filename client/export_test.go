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
