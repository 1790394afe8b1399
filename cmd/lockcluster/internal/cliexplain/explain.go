// Package cliexplain turns the errors lockcluster meets into what it
// prints and the exit status it ends with: the message says what happened
// once, without the prefixes of every layer the error crossed, and names
// the flag or variable to change where there is one.
package cliexplain

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"strings"
	"syscall"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/client"
)

// What lockcluster prints for an error says what happened once. The
// library's errors carry the prefix of each layer they crossed ("lock:
// acquire "k": client: acquire: client: server answered 401 unauthorized:
// cluster: missing or wrong bearer token"); Describe picks what a user
// needs from them, and names the flag or variable to change where there
// is one.

// Exit statuses. run passes the command's own status through; these are
// the ones lockcluster itself chooses (the sysexits.h numbers where one
// fits).
const (
	ExitOK          = 0
	ExitFailure     = 1  // anything else that went wrong
	ExitUsage       = 64 // bad flags or arguments (EX_USAGE)
	ExitRefused     = 65 // join: the leader refused the node (EX_DATAERR)
	ExitNoMember    = 67 // leave: no member has that id (EX_NOUSER)
	ExitUnavailable = 69 // the backend could not be reached, or has no leader (EX_UNAVAILABLE)
	ExitNotAcquired = 75 // run: the lock is held by someone else (EX_TEMPFAIL)
	ExitLost        = 76 // run: the lock was lost while held
	ExitNoPerm      = 77 // the backend refused the credentials (token, password), or the token lacks the right (EX_NOPERM)
	ExitConfig      = 78 // the settings do not fit the backend: another cluster's ID, TLS on one side only or a certificate it refuses, an address that does not resolve (EX_CONFIG)
	ExitCannotExec  = 126
	ExitNotFound    = 127
	ExitInterrupted = 130 // 128+SIGINT, as shells report it
)

// MsgAuth is what a 401 means to a user of the command line.
const MsgAuth = "authentication failed (check --token / LOCKCLUSTER_TOKEN)"

// MsgNoLeader is what a cluster without a leader means to a user.
const MsgNoLeader = "no leader (election in progress or no quorum)"

// Describe returns the message for err, without the layers' prefixes.
func Describe(err error) string {
	var (
		na    *lock.NotAcquiredError
		inv   *lock.InvalidError
		api   *client.APIError
		start *StartError
	)
	switch {
	case errors.As(err, &start):
		return Strip(start.Err.Error())
	case errors.Is(err, client.ErrUnauthorized):
		return MsgAuth
	case errors.Is(err, client.ErrTLS):
		return InFlagTerms(Strip(err.Error()))
	case errors.As(err, &na):
		return fmt.Sprintf("%q is held by another owner", na.Key)
	case errors.As(err, &inv):
		return "invalid " + inv.Field + ": " + inv.Reason
	case errors.Is(err, lock.ErrUnavailable):
		return unavailableText(err)
	case errors.As(err, &api) && api.Message != "":
		return Strip(api.Message)
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer in time (--timeout)"
	}
	return Strip(err.Error())
}

// Strip removes the layers' prefixes ("lock: ", "client: ", "cluster: ")
// from a message, and a part that repeats the one before it.
func Strip(msg string) string {
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
		return Strip(api.Message)
	}
	if reason, ok := transportReason(err); ok {
		return "cannot reach the cluster: " + reason
	}
	msg := Strip(err.Error())
	return strings.TrimPrefix(msg, "backend unavailable: ")
}

// transportReason reads the address and the reason out of a failed
// exchange: "127.0.0.1:7001: connection refused".
func transportReason(err error) (string, bool) {
	host, reason, ok := TransportFailure(err)
	return host + ": " + reason, ok
}

// TransportFailure is transportReason in two parts: the address and the
// reason. ok is false when err is no failed exchange.
func TransportFailure(err error) (host, reason string, ok bool) {
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
		reason = Strip(ue.Err.Error())
	}
	return host, reason, true
}

// ExitCode maps an error to lockcluster's exit status.
func ExitCode(err error) int {
	var start *StartError
	switch {
	case errors.As(err, &start):
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, syscall.ENOENT) {
			return ExitNotFound
		}
		return ExitCannotExec
	case errors.Is(err, lock.ErrUnauthorized), errors.Is(err, client.ErrUnauthorized), errors.Is(err, lock.ErrForbidden):
		return ExitNoPerm
	case errors.Is(err, client.ErrWrongCluster), errors.Is(err, client.ErrTLS), badAddress(err),
		errors.Is(err, lock.ErrUnsupported):
		return ExitConfig
	case errors.Is(err, client.ErrJoinRefused):
		return ExitRefused
	case errors.Is(err, lock.ErrInvalid):
		return ExitUsage
	case errors.Is(err, lock.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return ExitUnavailable
	case errors.Is(err, lock.ErrNotAcquired):
		return ExitNotAcquired
	case errors.Is(err, lock.ErrLost):
		return ExitLost
	case errors.Is(err, client.ErrNotFound):
		return ExitNoMember
	}
	return ExitFailure
}

// badAddress reports an address that names no host: one that does not
// resolve.
func badAddress(err error) bool {
	var dns *net.DNSError
	return errors.As(err, &dns) && dns.IsNotFound
}

// StartError is a command run could not start: exit status 126 or 127.
type StartError struct{ Err error }

func (e *StartError) Error() string { return e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }
