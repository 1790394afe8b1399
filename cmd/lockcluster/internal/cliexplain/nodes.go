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
	answered, leader := 0, ""
	var failed []Probe
	for _, p := range probes {
		if p.Err == nil {
			answered++
			if p.Status.LeaderID != "" {
				leader = p.Status.LeaderID
			}
			continue
		}
		failed = append(failed, p)
	}
	switch {
	case answered > 0 && leader == "":
		msg := fmt.Sprintf("%s: %d of %d nodes answer, none knows a leader", MsgNoLeader, answered, len(probes))
		if len(failed) > 0 {
			msg += "; " + SayOnce(failed)
		}
		return msg, ExitUnavailable, true
	case answered == 0 && len(failed) > 0:
		code := FailureCode(failed)
		msg := SayOnce(failed)
		if code == ExitUnavailable {
			msg = "no node answers: " + msg
		}
		return msg, code, true
	}
	return "", 0, false
}

// FailureCode is the exit status when none of the nodes answered: a
// refused credential (77) or a setting that does not fit (78) when every
// node said so, else unavailable (69).
func FailureCode(failed []Probe) int {
	if len(failed) == 0 {
		return ExitUnavailable
	}
	c := ExitCode(failed[0].Err)
	if c != ExitNoPerm && c != ExitConfig {
		return ExitUnavailable
	}
	for _, p := range failed[1:] {
		if ExitCode(p.Err) != c {
			return ExitUnavailable
		}
	}
	return c
}

// SayOnce says why the nodes failed: once, "all 3 nodes: ..." ("both
// nodes: ..."), when they failed the same way, else each with its
// address.
func SayOnce(failed []Probe) string {
	reasons := make([]string, len(failed))
	same := true
	for i, p := range failed {
		reasons[i] = NodeReason(p)
		same = same && reasons[i] == reasons[0]
	}
	switch {
	case len(failed) == 1:
		return failed[0].Addr + ": " + reasons[0]
	case same && len(failed) == 2:
		return "both nodes: " + reasons[0]
	case same:
		return fmt.Sprintf("all %d nodes: %s", len(failed), reasons[0])
	}
	parts := make([]string, len(failed))
	for i, p := range failed {
		parts[i] = p.Addr + ": " + reasons[i]
	}
	return strings.Join(parts, "; ")
}

// tlsHint is what the client's ErrTLS says to do ("it does not speak
// TLS (use an http:// address ...)"), in flag terms, without the address
// and Go's own words.
func tlsHint(err error) string {
	msg := InFlagTerms(Strip(err.Error()))
	for _, p := range splitOutsideParens(msg) {
		if strings.HasPrefix(p, "it ") || strings.HasPrefix(p, "its ") || strings.HasPrefix(p, "the node serves") {
			return p
		}
	}
	return msg
}

// splitOutsideParens splits a message at each ": " that is not inside
// parentheses: a hint's own colons ("(mutual TLS: pass --tls-cert ...)")
// stay in it.
func splitOutsideParens(msg string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(msg); i++ {
		switch {
		case msg[i] == '(':
			depth++
		case msg[i] == ')' && depth > 0:
			depth--
		case depth == 0 && strings.HasPrefix(msg[i:], ": "):
			parts = append(parts, msg[start:i])
			start = i + 2
			i++
		}
	}
	return append(parts, msg[start:])
}

// NodeReason says in a few words why a node did not answer, without its
// address.
func NodeReason(p Probe) string {
	if errors.Is(p.Err, client.ErrUnauthorized) {
		return MsgAuth
	}
	if errors.Is(p.Err, client.ErrTLS) {
		return "TLS: " + tlsHint(p.Err)
	}
	if _, reason, ok := TransportFailure(p.Err); ok {
		return reason
	}
	return strings.ReplaceAll(Describe(p.Err), p.Addr, "the node")
}
