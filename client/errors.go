package client

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/drivers"
)

// ErrUnauthorized: the cluster rejected the request's token (missing or
// wrong). It is never retried. Errors that match it also match
// drivers.ErrUnauthorized, the same refusal on every backend.
var ErrUnauthorized = errors.New("client: unauthorized: missing or wrong token (set Token, LOCKCLUSTER_TOKEN)")

// ErrNotFound: GET of a key that nobody holds, or an unknown endpoint.
var ErrNotFound = errors.New("client: not found")

// ErrForbidden: the cluster knows the request's credential, but it lacks
// the right the request needs (a client token asking to join, say), or
// the key lies outside its prefixes. The error's message names the
// missing right. It is drivers.ErrForbidden (lock.ErrForbidden), the same
// refusal on every backend.
var ErrForbidden = drivers.ErrForbidden

// ErrJoinRefused: the leader would not add the node (it has raft state,
// belongs to another cluster, answers to another id, or could not be
// asked); the error's message says which.
var ErrJoinRefused = errors.New("client: join refused")

// ErrWrongCluster: the node belongs to another cluster than
// Config.ClusterID names. It is never retried.
var ErrWrongCluster = errors.New("client: the node belongs to another cluster")

// APIError is a non-2xx answer of the cluster. errors.Is maps its code to
// the sentinels of package drivers (and ErrUnauthorized, ErrNotFound).
// For a 409 (not_acquired), errors.As also finds a
// *drivers.NotAcquiredError that names the key and, when the cluster
// told, the holder's remaining lease (HolderTTL).
type APIError struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Code is the machine-readable code of the error body ("invalid",
	// "not_acquired", "unavailable" ...: the api.Code* constants).
	Code string
	// Message is the server's human-readable message.
	Message string

	notAcquired *drivers.NotAcquiredError // for a 409
}

func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.StatusCode)
	}
	return fmt.Sprintf("server answered %d %s: %s", e.StatusCode, e.Code, msg)
}

// Is makes errors.Is match the sentinel that corresponds to the code (or,
// when the body had no code, to the status).
func (e *APIError) Is(target error) bool {
	switch e.kind() {
	case api.CodeInvalid, api.CodeTooLarge:
		return target == drivers.ErrInvalid
	case api.CodeNotAcquired:
		return target == drivers.ErrNotAcquired
	case api.CodeFull:
		return target == drivers.ErrFull
	case api.CodeUnavailable:
		return target == drivers.ErrUnavailable
	case api.CodeUnauthorized:
		return target == ErrUnauthorized || target == drivers.ErrUnauthorized
	case api.CodeNotFound:
		return target == ErrNotFound
	case api.CodeWrongCluster:
		return target == ErrWrongCluster
	case api.CodeForbidden:
		return target == ErrForbidden
	case api.CodeJoinRefused:
		return target == ErrJoinRefused
	case api.CodeUnsupported:
		return target == drivers.ErrUnsupported
	}
	return false
}

// Unwrap returns the *drivers.NotAcquiredError of a 409, else nil.
func (e *APIError) Unwrap() error {
	if e.notAcquired == nil {
		return nil
	}
	return e.notAcquired
}

// kind is the error code, derived from the status when the body had none
// (a proxy in between, or an older server).
func (e *APIError) kind() string {
	if e.Code != "" {
		return e.Code
	}
	return api.CodeOf(e.StatusCode)
}

// retryElsewhere reports whether another node may answer the same request
// better: the node had no leader, no quorum or was shutting down.
func (e *APIError) retryElsewhere() bool { return e.kind() == api.CodeUnavailable }
