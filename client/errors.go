package client

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/zerotal/lock/drivers"
)

// ErrUnauthorized: the cluster rejected the request's token (missing or
// wrong). It is never retried.
var ErrUnauthorized = errors.New("client: unauthorized: missing or wrong token (set Token, LOCKCLUSTER_TOKEN)")

// ErrNotFound: GET of a key that nobody holds, or an unknown endpoint.
var ErrNotFound = errors.New("client: not found")

// ErrWrongCluster: the node belongs to another cluster than
// Config.ClusterID names. It is never retried.
var ErrWrongCluster = errors.New("client: the node belongs to another cluster")

// clusterIDHeader carries Config.ClusterID (the server's name for it).
const clusterIDHeader = "X-Lock-Cluster-Id"

// APIError is a non-2xx answer of the cluster. errors.Is maps its code to
// the sentinels of package drivers (and ErrUnauthorized, ErrNotFound).
type APIError struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Code is the machine-readable code of the error body ("invalid",
	// "not_acquired", "unavailable" ...).
	Code string
	// Message is the server's human-readable message.
	Message string
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
	case "invalid", "too_large":
		return target == drivers.ErrInvalid
	case "not_acquired":
		return target == drivers.ErrNotAcquired
	case "full":
		return target == drivers.ErrFull
	case "unavailable":
		return target == drivers.ErrUnavailable
	case "unauthorized":
		return target == ErrUnauthorized
	case "not_found":
		return target == ErrNotFound
	case "wrong_cluster":
		return target == ErrWrongCluster
	}
	return false
}

// HTTPStatus returns the status the server answered.
func (e *APIError) HTTPStatus() int { return e.StatusCode }

// kind is the error code, derived from the status when the body had none
// (a proxy in between, or an older server).
func (e *APIError) kind() string {
	if e.Code != "" {
		return e.Code
	}
	switch e.StatusCode {
	case http.StatusBadRequest:
		return "invalid"
	case http.StatusUnauthorized:
		return "unauthorized"
	case http.StatusNotFound:
		return "not_found"
	case http.StatusConflict:
		return "not_acquired"
	case http.StatusRequestEntityTooLarge:
		return "too_large"
	case http.StatusTooManyRequests:
		return "full"
	case http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
		return "unavailable"
	}
	return "internal"
}

// retryElsewhere reports whether another node may answer the same request
// better: the node had no leader, no quorum or was shutting down.
func (e *APIError) retryElsewhere() bool { return e.kind() == "unavailable" }
