package client

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"
)

// A cluster that has lost its quorum answers every request with 503 "no
// leader" from the nodes that are up, and nothing from those that are
// down; retrying until Config.Timeout changes nothing until an operator
// brings nodes back. A leader look-up (discover) that ends with no leader
// also asks whether one can be elected from what it saw: when the voters
// known not to answer leave fewer than a majority of the configuration,
// none can, and a call that failed a round of every node stops with
// ErrUnavailable naming the nodes, instead of trying until its timeout.
// While a majority may be up (an ordinary election after a leader's
// loss), calls wait for the election as before.

// noLeader is the verdict of a leader look-up that found no leader and no
// quorum that could elect one.
type noLeader struct {
	at  time.Time // when the look-up started
	err error
}

// judgeNoLeader records the verdict of a look-up started at start that
// found no leader: an error when the voters known to be down leave no
// majority, or none when a leader may yet be elected.
func (c *Client) judgeNoLeader(start time.Time, probes map[string]*probe) {
	if err := noQuorum(probes); err != nil {
		c.health.noLeader.Store(&noLeader{at: start, err: err})
		return
	}
	c.health.noLeader.Store(nil)
}

// noLeaderSince returns the verdict of a look-up started at start or
// later that found no leader and no quorum, or nil.
func (c *Client) noLeaderSince(start time.Time) error {
	if v := c.health.noLeader.Load(); v != nil && !v.at.Before(start) {
		return v.err
	}
	return nil
}

// noQuorum says why no leader can be elected from the nodes probes found,
// or nil when one may be. The voters are those of the largest raft
// configuration a node reported. A voter is down when it was probed at its
// HTTP address (from the member map) and did not answer; a silent address
// that is no voter's known one counts for a voter whose address the map
// lacks (its entry may not be applied on the node that answered), at most
// one each. A voter not probed may be up.
func noQuorum(probes map[string]*probe) error {
	var voters []Peer
	answered := map[string]bool{}
	for _, p := range probes {
		if !p.ended() || p.st == nil {
			continue
		}
		answered[p.st.ID] = true
		var v []Peer
		for _, peer := range p.st.Peers {
			if strings.EqualFold(peer.Suffrage, "voter") {
				v = append(v, peer)
			}
		}
		if len(v) > len(voters) {
			voters = v
		}
	}
	if len(voters) == 0 {
		return nil
	}
	known := map[string]string{} // HTTP address -> voter id
	unknown := 0                 // voters without a known address that did not answer
	for _, v := range voters {
		switch {
		case v.HTTPAddr != "":
			known[v.HTTPAddr] = v.ID
		case !answered[v.ID]:
			unknown++
		}
	}
	var down []string
	for base, p := range probes {
		if !p.ended() || !p.silent {
			continue
		}
		host := base
		if u, err := url.Parse(base); err == nil {
			host = u.Host
		}
		if id, ok := known[host]; ok {
			if !answered[id] {
				down = append(down, host)
			}
		} else if unknown > 0 {
			unknown--
			down = append(down, host)
		}
	}
	need := len(voters)/2 + 1
	if len(voters)-len(down) >= need {
		return nil
	}
	slices.Sort(down)
	ids := slices.Sorted(maps.Keys(answered))
	return fmt.Errorf("no leader, and none can be elected: %d of the %d voters do not answer (%s) and a leader needs %d; %s %s and %s no leader",
		len(down), len(voters), strings.Join(down, ", "), need, strings.Join(ids, ", "), plural(len(ids), "answers", "answer"), plural(len(ids), "knows", "know"))
}

// plural picks one or many by n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
