package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/drivers"
)

// List returns the held keys that start with prefix, sorted by key, at
// most limit of them (limit <= 0: the server's default). truncated is true
// when more keys matched.
func (c *Client) List(ctx context.Context, prefix string, limit int) (locks []api.Lock, truncated bool, err error) {
	if err := checkText("prefix", prefix); err != nil {
		return nil, false, err
	}
	q := url.Values{}
	if prefix != "" {
		q.Set("prefix", prefix)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var w api.LockList
	if err := c.call(ctx, request{op: "list", method: http.MethodGet, path: api.PathLocks, query: q}, &w); err != nil {
		return nil, false, err
	}
	return w.Locks, w.Truncated, nil
}

// Status returns the status of the first node that answers (the leader
// when known).
func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
	if err := c.call(ctx, request{op: "status", method: http.MethodGet, path: api.PathStatus}, &st); err != nil {
		return Status{}, err
	}
	return st, nil
}

// NodeStatus returns the status of the node at addr ("host:port" or a base
// URL), without failing over to another node.
func (c *Client) NodeStatus(ctx context.Context, addr string) (Status, error) {
	var st Status
	if err := c.callNode(ctx, addr, "status", api.PathStatus, &st); err != nil {
		return Status{}, err
	}
	return st, nil
}

// NodeInfo returns what the node at addr ("host:port" or a base URL) says
// of itself at api.PathNode, which needs no credential: its id, cluster
// ID, membership and raft state. A leader asks a node this before adding
// it. It does not fail over to another node.
func (c *Client) NodeInfo(ctx context.Context, addr string) (api.NodeInfo, error) {
	var info api.NodeInfo
	if err := c.callNode(ctx, addr, "node", api.PathNode, &info); err != nil {
		return api.NodeInfo{}, err
	}
	return info, nil
}

// callNode GETs path of the node at addr into out, without failing over.
func (c *Client) callNode(ctx context.Context, addr, op, path string, out any) error {
	base, err := baseURLWith(addr, c.cfg.defaultScheme())
	if err != nil {
		return err
	}
	r := request{op: op, method: http.MethodGet, path: path}
	if _, err := c.attempt(ctx, ctx, base, r, nil, out, false); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("client: %s: %w", op, ctx.Err())
		}
		if retryable(err) {
			err = drivers.Unavailable(op, err)
		}
		return &nodeError{base: base, err: err}
	}
	return nil
}

// maxMetrics bounds the exposition NodeMetrics reads.
const maxMetrics = 16 << 20

// NodeMetrics returns the Prometheus text exposition (format 0.0.4) the
// node at addr ("host:port" or a base URL) serves at api.PathMetrics,
// with this client's token, cluster ID and TLS, without failing over to
// another node. A node started without metrics answers 404, an
// *APIError.
func (c *Client) NodeMetrics(ctx context.Context, addr string) ([]byte, error) {
	if c.closed.Load() {
		return nil, drivers.ErrClosed
	}
	base, err := baseURLWith(addr, c.cfg.defaultScheme())
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+api.PathMetrics, nil)
	if err != nil {
		return nil, fmt.Errorf("client: metrics: build request: %w", err)
	}
	// The text format, whatever else the node's handler could negotiate.
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	c.identify(req.Header)
	resp, err := c.http.Do(req)
	if err != nil {
		if tlsErr := tlsFailure(base, err, c.certAsked.Load()); tlsErr != nil {
			return nil, tlsErr
		}
		return nil, &nodeError{base: base, err: drivers.Unavailable("metrics", err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &nodeError{base: base, err: readAPIError(resp, "")}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxMetrics+1))
	if err != nil {
		return nil, &nodeError{base: base, err: drivers.Unavailable("metrics", err)}
	}
	if len(b) > maxMetrics {
		return nil, &nodeError{base: base, err: fmt.Errorf("metrics: exposition larger than %d bytes", maxMetrics)}
	}
	return b, nil
}

// Join asks the cluster to add the node id as a voter: its raft address
// is raftAddr, its HTTP API at httpAddr (host:port). The leader first
// asks the node at httpAddr (GET /v1/node, with no credential) and then
// whatever answers at raftAddr (over raft, with the raft handshake), and
// refuses, with ErrJoinRefused, a node that has raft state, another
// cluster ID, id or raft address, other table limits, or that it cannot
// reach; and a raftAddr that is another member's (a join never removes a
// member to make room). Joining again with the same id and address does
// nothing. It needs an operator's token.
func (c *Client) Join(ctx context.Context, id, raftAddr, httpAddr string) error {
	return c.call(ctx, request{op: "join", method: http.MethodPost, path: api.PathJoin,
		body: api.JoinRequest{ID: id, Addr: raftAddr, HTTP: httpAddr}}, nil)
}

// Leave asks the cluster to remove the node id.
func (c *Client) Leave(ctx context.Context, id string) error {
	return c.call(ctx, request{op: "leave", method: http.MethodPost, path: api.PathLeave,
		body: api.LeaveRequest{ID: id}}, nil)
}

// nodeError names the node a NodeStatus failure came from.
type nodeError struct {
	base string
	err  error
}

func (e *nodeError) Error() string { return "client: node " + e.base + ": " + e.err.Error() }
func (e *nodeError) Unwrap() error { return e.err }
