package client

import (
	"context"
	"net/http"
	"strings"
	"time"
)

// candidates returns the nodes to try, preferred (the leader when known)
// first. When the leader is unknown or in doubt it asks the cluster first;
// only one caller does so at a time, the others go on with what is known.
func (c *Client) candidates(ctx context.Context) []string {
	if c.stale.Load() && c.discoveryDue() && c.discoveryMu.TryLock() {
		if c.stale.Load() {
			c.lastDiscovery.Store(time.Now().UnixNano())
			if leader, ok := c.discover(ctx); ok {
				c.preferred.Store(&leader)
				c.stale.Store(false)
			}
		}
		c.discoveryMu.Unlock()
	}
	out := make([]string, 0, len(c.bases)+1)
	first := ""
	if p := c.preferred.Load(); p != nil {
		first = *p
		out = append(out, first)
	}
	for _, b := range c.bases {
		if b != first {
			out = append(out, b)
		}
	}
	return out
}

// minDiscoveryInterval spaces out leader look-ups that fail (no leader
// during an election, or a leader this client cannot reach), so that
// calls do not each pay for a round of status requests.
const minDiscoveryInterval = 200 * time.Millisecond

func (c *Client) discoveryDue() bool {
	last := c.lastDiscovery.Load()
	return last == 0 || time.Since(time.Unix(0, last)) >= minDiscoveryInterval
}

// discover asks the nodes, in order, for /v1/status and returns the
// leader's HTTP base URL from the first that knows it.
func (c *Client) discover(ctx context.Context) (string, bool) {
	order := c.bases
	if p := c.preferred.Load(); p != nil {
		order = append([]string{*p}, c.bases...)
	}
	for _, b := range order {
		sctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		var st Status
		err := c.attempt(sctx, sctx, b, request{op: "status", method: http.MethodGet, path: "/v1/status"}, nil, &st)
		cancel()
		if ctx.Err() != nil {
			return "", false
		}
		if err == nil && st.LeaderHTTP != "" {
			// Members publish host:port; every node of a cluster speaks
			// the scheme of the one that answered.
			leader, err := baseURLWith(st.LeaderHTTP, schemeOf(b))
			if err != nil {
				continue
			}
			if leader != b && !c.reachable(ctx, leader) {
				// The leader advertises an address this client cannot
				// reach: keep going through the nodes it can.
				c.log.Debug("leader not reachable from here", "leader", leader)
				return "", false
			}
			c.log.Debug("leader found", "leader_id", st.LeaderID, "leader", leader, "asked", b)
			return leader, true
		}
	}
	return "", false
}

// schemeOf returns the scheme of a base URL.
func schemeOf(base string) string {
	scheme, _, _ := strings.Cut(base, "://")
	return scheme
}

// reachable reports whether base answers /v1/status within a short time.
func (c *Client) reachable(ctx context.Context, base string) bool {
	sctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	var st Status
	return c.attempt(sctx, sctx, base, request{op: "status", method: http.MethodGet, path: "/v1/status"}, nil, &st) == nil
}
