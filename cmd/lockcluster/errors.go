package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/client"
)

// What lockcluster prints for an error says what happened once. The
// library's errors carry the prefix of each layer they crossed ("lock:
// acquire "k": client: acquire: client: server answered 401 unauthorized:
// cluster: missing or wrong bearer token"); describe picks what a user
// needs from them, and names the flag or variable to change where there
// is one.

// msgAuth is what a 401 means to a user of the command line.
const msgAuth = "authentication failed (check --token / LOCKCLUSTER_TOKEN)"

// msgNoLeader is what a cluster without a leader means to a user.
const msgNoLeader = "no leader (election in progress or no quorum)"

// describe returns the message for err, without the layers' prefixes.
func describe(err error) string {
	var (
		na    *lock.NotAcquiredError
		inv   *lock.InvalidError
		api   *client.APIError
		start *startError
	)
	switch {
	case errors.As(err, &start):
		return strip(start.err.Error())
	case errors.Is(err, client.ErrUnauthorized):
		return msgAuth
	case errors.Is(err, client.ErrTLS):
		return strip(err.Error()) + "; the flags are --tls-ca, --tls-cert and --tls-key (LOCKCLUSTER_TLS_CA, LOCKCLUSTER_TLS_CERT, LOCKCLUSTER_TLS_KEY)"
	case errors.As(err, &na):
		return fmt.Sprintf("%q is held by another owner", na.Key)
	case errors.As(err, &inv):
		return "invalid " + inv.Field + ": " + inv.Reason
	case errors.Is(err, lock.ErrUnavailable):
		return unavailableText(err)
	case errors.As(err, &api) && api.Message != "":
		return strip(api.Message)
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer in time (--timeout)"
	}
	return strip(err.Error())
}

// strip removes the layers' prefixes ("lock: ", "client: ", "cluster: ")
// from a message, and a part that repeats the one before it.
func strip(msg string) string {
	parts := strings.Split(msg, ": ")
	out := parts[:0]
	for _, p := range parts {
		switch {
		case p == "lock", p == "client", p == "cluster":
		case len(out) > 0 && out[len(out)-1] == p:
		default:
			out = append(out, p)
		}
	}
	return strings.Join(out, ": ")
}

// unavailableText says why the backend could not be reached: the node's
// own answer when one answered (a 503), else which address refused or
// did not answer.
func unavailableText(err error) string {
	var api *client.APIError
	if errors.As(err, &api) && api.Message != "" {
		return strip(api.Message)
	}
	if reason, ok := transportReason(err); ok {
		return "cannot reach the cluster: " + reason
	}
	msg := strip(err.Error())
	return strings.TrimPrefix(msg, "backend unavailable: ")
}

// transportReason reads the address and the reason out of a failed
// exchange: "127.0.0.1:7001: connection refused".
func transportReason(err error) (string, bool) {
	host, reason, ok := transportFailure(err)
	return host + ": " + reason, ok
}

// transportFailure is transportReason in two parts.
func transportFailure(err error) (host, reason string, ok bool) {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return "", "", false
	}
	host = ue.URL
	if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
		host = u.Host
	}
	var ne net.Error
	var dns *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		reason = "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		reason = "connection reset"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		reason = "no route to host"
	case errors.As(err, &ne) && ne.Timeout():
		reason = "no answer in time"
	case errors.As(err, &dns):
		reason = dns.Err
	default:
		reason = strip(ue.Err.Error())
	}
	return host, reason, true
}

// exitCodeFor maps an error to lockcluster's exit status.
func exitCodeFor(err error) int {
	var start *startError
	switch {
	case errors.As(err, &start):
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, syscall.ENOENT) {
			return exitNotFound
		}
		return exitCannotExec
	case errors.Is(err, client.ErrUnauthorized):
		return exitNoPerm
	case errors.Is(err, lock.ErrInvalid):
		return exitUsage
	case errors.Is(err, lock.ErrUnavailable):
		return exitUnavailable
	case errors.Is(err, lock.ErrNotAcquired):
		return exitNotAcquired
	case errors.Is(err, lock.ErrLost):
		return exitLost
	case errors.Is(err, client.ErrNotFound):
		return exitNoMember
	}
	return exitFailure
}

// startError is a command run could not start: exit status 126 or 127.
type startError struct{ err error }

func (e *startError) Error() string { return e.err.Error() }
func (e *startError) Unwrap() error { return e.err }

// nodeStatuser asks one node for its status (a *client.Client does).
type nodeStatuser interface {
	NodeStatus(ctx context.Context, addr string) (client.Status, error)
}

// probe is what one node answered to a status request.
type probe struct {
	addr string
	st   client.Status
	err  error
}

// probeNodes asks every address for its status at once, each within d.
func probeNodes(ctx context.Context, c nodeStatuser, addrs []string, d time.Duration) []probe {
	out := make([]probe, len(addrs))
	var wg sync.WaitGroup
	for i, a := range addrs {
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, d)
			defer cancel()
			st, err := c.NodeStatus(pctx, a)
			out[i] = probe{addr: a, st: st, err: err}
		})
	}
	wg.Wait()
	return out
}

// explainUnavailable refines an ErrUnavailable from a cluster: it asks the
// nodes themselves what is wrong, since the error only tells the last
// node's failure (often a connection refused by a node that is down, when
// the ones that are up have no leader). It returns the message and exit
// status, or ok false when the nodes tell nothing more.
func explainUnavailable(ctx context.Context, c nodeStatuser, addrs []string) (msg string, code int, ok bool) {
	if c == nil || len(addrs) == 0 || ctx.Err() != nil {
		return "", 0, false
	}
	probes := probeNodes(ctx, c, addrs, 2*time.Second)
	answered, unauthorized, leader := 0, 0, ""
	var down []string
	for _, p := range probes {
		switch {
		case p.err == nil:
			answered++
			if p.st.LeaderID != "" {
				leader = p.st.LeaderID
			}
		case errors.Is(p.err, client.ErrUnauthorized):
			unauthorized++
		default:
			down = append(down, nodeProblem(p))
		}
	}
	switch {
	case unauthorized > 0 && answered == 0:
		return msgAuth, exitNoPerm, true
	case answered > 0 && leader == "":
		msg := fmt.Sprintf("%s: %d of %d nodes answer, none knows a leader", msgNoLeader, answered, len(probes))
		if len(down) > 0 {
			msg += "; " + strings.Join(down, "; ")
		}
		return msg, exitUnavailable, true
	case answered == 0 && len(down) > 0:
		return "no node answers: " + strings.Join(down, "; "), exitUnavailable, true
	}
	return "", 0, false
}

// nodeProblem says in a few words why a node did not answer.
func nodeProblem(p probe) string {
	if reason, ok := transportReason(p.err); ok {
		return reason
	}
	return p.addr + ": " + describe(p.err)
}
