package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/hashicorp/raft"

	"github.com/zerotal/lock/drivers"
)

// Error codes of the HTTP API.
const (
	codeInvalid      = "invalid"
	codeUnauthorized = "unauthorized"
	codeNotFound     = "not_found"
	codeNotAcquired  = "not_acquired"
	codeTooLarge     = "too_large"
	codeFull         = "full"
	codeUnavailable  = "unavailable"
	codeInternal     = "internal"
)

var (
	errUnauthorized = errors.New("cluster: missing or wrong bearer token")
	errNotFound     = errors.New("cluster: no such lock")
	// errUnknownMember: leave of an id the cluster does not have (404).
	errUnknownMember = errors.New("cluster: unknown member")
)

// conflictError is a 409 that can tell the holder's remaining TTL.
type conflictError struct {
	key         string
	holderTTLms int64 // < 0: unknown
}

func (e *conflictError) Error() string {
	return (&drivers.NotAcquiredError{Key: e.key}).Error()
}

func (e *conflictError) Is(target error) bool { return target == drivers.ErrNotAcquired }

// errorBody is the JSON of every non-2xx answer.
type errorBody struct {
	Code        string `json:"code"`
	Message     string `json:"message"`
	HolderTTLms *int64 `json:"holder_ttl_ms,omitempty"`
}

// isRaftUnavailable reports raft errors that mean "no leader here now":
// the client may retry, on this node or another.
// errLeadershipChanged ends requests served by a leader that stepped down.
var errLeadershipChanged = errors.New("leadership changed; retry")

// leadershipEnded reports errors after which this node no longer leads,
// so retrying a proposal here is pointless.
func leadershipEnded(err error) bool {
	return errors.Is(err, raft.ErrNotLeader) ||
		errors.Is(err, raft.ErrLeadershipLost) ||
		errors.Is(err, raft.ErrRaftShutdown) ||
		errors.Is(err, errLeadershipChanged)
}

func isRaftUnavailable(err error) bool {
	return errors.Is(err, raft.ErrNotLeader) ||
		errors.Is(err, raft.ErrLeadershipLost) ||
		errors.Is(err, raft.ErrRaftShutdown) ||
		errors.Is(err, raft.ErrEnqueueTimeout) ||
		errors.Is(err, raft.ErrLeadershipTransferInProgress) ||
		errors.Is(err, raft.ErrAbortedByRestore)
}

// classify maps an error to its HTTP status and API code. It is the one
// place where errors become statuses.
func classify(err error) (int, string) {
	var maxBytes *http.MaxBytesError
	switch {
	case errors.As(err, &maxBytes):
		return http.StatusRequestEntityTooLarge, codeTooLarge
	case errors.Is(err, drivers.ErrInvalid):
		return http.StatusBadRequest, codeInvalid
	case errors.Is(err, errUnauthorized):
		return http.StatusUnauthorized, codeUnauthorized
	case errors.Is(err, errNotFound), errors.Is(err, errUnknownMember):
		return http.StatusNotFound, codeNotFound
	case errors.Is(err, drivers.ErrNotAcquired):
		return http.StatusConflict, codeNotAcquired
	case errors.Is(err, drivers.ErrFull):
		return http.StatusTooManyRequests, codeFull
	case errors.Is(err, drivers.ErrUnavailable), errors.Is(err, drivers.ErrClosed),
		isRaftUnavailable(err), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, codeUnavailable
	}
	return http.StatusInternalServerError, codeInternal
}

// writeError answers with the status and JSON body for err.
func writeError(w http.ResponseWriter, err error) {
	status, code := classify(err)
	body := errorBody{Code: code, Message: err.Error()}
	var c *conflictError
	if errors.As(err, &c) && c.holderTTLms >= 0 {
		body.HolderTTLms = &c.holderTTLms
	}
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// unavailable wraps err (typically a raft error) so it matches
// drivers.ErrUnavailable and reads well.
func unavailable(op string, err error) error {
	return drivers.Unavailable(op, err)
}

// invalidf builds a 400 error.
func invalidf(field, format string, args ...any) error {
	return &drivers.InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
