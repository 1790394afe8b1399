package client

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"
)

// candidates returns the nodes to try: the preferred one (the leader when
// known) first, then the others in the configured order. Nodes that went
// silent are left out until they answer again (a leader look-up asks them
// too), unless every node did: then all are tried. When the leader is
// unknown or in doubt it asks the cluster first; only one caller does so
// at a time, the others go on with what is known.
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
	all := make([]string, 0, len(c.bases)+1)
	first := ""
	if p := c.preferred.Load(); p != nil {
		first = *p
		all = append(all, first)
	}
	for _, b := range c.bases {
		if b != first {
			all = append(all, b)
		}
	}
	live := make([]string, 0, len(all))
	for _, b := range all {
		if !c.isSuspect(b) {
			live = append(live, b)
		}
	}
	if len(live) == 0 {
		return all
	}
	return live
}

// minDiscoveryInterval spaces out leader look-ups that fail (no leader
// during an election, or a leader this client cannot reach), so that
// calls do not each pay for a round of status requests.
const minDiscoveryInterval = 200 * time.Millisecond

func (c *Client) discoveryDue() bool {
	last := c.lastDiscovery.Load()
	return last == 0 || time.Since(time.Unix(0, last)) >= minDiscoveryInterval
}

// discover asks every node for /v1/status at once and returns the base
// URL of the leader named in the highest term, once that leader has
// answered too (so the client can reach it). It does not wait for nodes
// that went silent before, so a stopped node delays it only when nothing
// else is known yet, and then by half an AttemptTimeout at most.
func (c *Client) discover(ctx context.Context) (string, bool) {
	start := time.Now()
	probes := make(map[string]*probe, len(c.bases))
	for _, b := range c.bases {
		probes[b] = c.probe(b, time.Time{})
	}
	for {
		changed := c.health.changes()
		leader, found, final := c.pickLeader(probes)
		if final {
			if found {
				c.log.Debug("leader found", "leader", leader)
				c.health.noLeader.Store(nil)
			} else {
				c.judgeNoLeader(start, probes)
			}
			return leader, found
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return "", false
		}
	}
}

// pickLeader looks at the answers so far. Each names a leader in a term
// (a node that leads names itself); the leader of the highest term wins
// once it has answered itself, so the client knows it can reach it. A
// leader that went silent is passed over without waiting for it, in
// favour of the next claim. A leader that is not among the configured
// addresses is asked too (it is added to probes): it may advertise an
// address this client cannot reach. final is false while the answer may
// still change.
func (c *Client) pickLeader(probes map[string]*probe) (leader string, found, final bool) {
	type claim struct {
		term   uint64
		leader string
		self   bool
	}
	var claims []claim
	pending := false
	for b, p := range probes {
		if !p.ended() {
			if !c.isSuspect(b) {
				pending = true
			}
			continue
		}
		switch st := p.st; {
		case st == nil:
		case isLeader(st):
			claims = append(claims, claim{st.Term, b, true})
		case st.LeaderHTTP != "":
			// Members publish host:port; every node of a cluster speaks
			// the scheme of the one that answered.
			if l, err := baseURLWith(st.LeaderHTTP, schemeOf(b)); err == nil {
				claims = append(claims, claim{st.Term, l, false})
			}
		}
	}
	// Highest term first; in a term, a node's claim about itself first.
	slices.SortFunc(claims, func(a, b claim) int {
		if a.term != b.term {
			return cmp.Compare(b.term, a.term)
		}
		switch {
		case a.self && !b.self:
			return -1
		case b.self && !a.self:
			return 1
		}
		return 0
	})
	for _, cl := range claims {
		p, asked := probes[cl.leader]
		if !asked {
			p = c.probe(cl.leader, time.Time{})
			probes[cl.leader] = p
		}
		switch {
		case p.ended() && p.st != nil:
			return cl.leader, true, true
		case p.ended() || c.isSuspect(cl.leader):
			// Not reachable from here, or silent: the next claim.
		default:
			return "", false, false // wait for its answer
		}
	}
	if !pending && len(claims) > 0 {
		c.log.Debug("no leader reachable from here", "named", claims[0].leader, "term", claims[0].term)
	}
	return "", false, !pending
}

// schemeOf returns the scheme of a base URL.
func schemeOf(base string) string {
	scheme, _, _ := strings.Cut(base, "://")
	return scheme
}
