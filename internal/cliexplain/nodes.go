package cliexplain

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/zerotal/lock/client"
)

// NodeStatuser asks one node for its status (a *client.Client does).
type NodeStatuser interface {
	NodeStatus(ctx context.Context, addr string) (client.Status, error)
}

// Probe is what one node answered to a status request.
type Probe struct {
	Addr   string
	Status client.Status
	Err    error
}

// ProbeNodes asks every address for its status at once, each within d.
func ProbeNodes(ctx context.Context, c NodeStatuser, addrs []string, d time.Duration) []Probe {
	out := make([]Probe, len(addrs))
	var wg sync.WaitGroup
	for i, a := range addrs {
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, d)
			defer cancel()
			st, err := c.NodeStatus(pctx, a)
			out[i] = Probe{Addr: a, Status: st, Err: err}
		})
	}
	wg.Wait()
	return out
}

// ExplainUnavailable refines an ErrUnavailable from a cluster: it asks the
// nodes themselves what is wrong, since the error only tells the last
// node's failure (often a connection refused by a node that is down, when
// the ones that are up have no leader). It returns the message and exit
// status, or ok false when the nodes tell nothing more.
func ExplainUnavailable(ctx context.Context, c NodeStatuser, addrs []string) (msg string, code int, ok bool) {
	if c == nil || len(addrs) == 0 || ctx.Err() != nil {
		return "", 0, false
	}
	probes := ProbeNodes(ctx, c, addrs, 2*time.Second)
	answered, unauthorized, leader := 0, 0, ""
	var down []string
	for _, p := range probes {
		switch {
		case p.Err == nil:
			answered++
			if p.Status.LeaderID != "" {
				leader = p.Status.LeaderID
			}
		case errors.Is(p.Err, client.ErrUnauthorized):
			unauthorized++
		default:
			down = append(down, nodeProblem(p))
		}
	}
	switch {
	case unauthorized > 0 && answered == 0:
		return MsgAuth, ExitNoPerm, true
	case answered > 0 && leader == "":
		msg := fmt.Sprintf("%s: %d of %d nodes answer, none knows a leader", MsgNoLeader, answered, len(probes))
		if len(down) > 0 {
			msg += "; " + strings.Join(down, "; ")
		}
		return msg, ExitUnavailable, true
	case answered == 0 && len(down) > 0:
		return "no node answers: " + strings.Join(down, "; "), ExitUnavailable, true
	}
	return "", 0, false
}

// nodeProblem says in a few words why a node did not answer.
func nodeProblem(p Probe) string {
	if reason, ok := transportReason(p.Err); ok {
		return reason
	}
	return p.Addr + ": " + Describe(p.Err)
}
