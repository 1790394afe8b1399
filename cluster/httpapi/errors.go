package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/drivers"
)

var (
	errUnauthorized = errors.New("cluster: missing or wrong bearer token")
	errNotFound     = errors.New("cluster: no such lock")
)

// ErrUnknownMember is what a Store's Leave wraps for an id the cluster
// does not have: a 404, so that a typo is not taken for a removal.
var ErrUnknownMember = errors.New("cluster: unknown member")

// ErrJoinRefused is what a Store's Join wraps for a node it will not add
// (it has raft state, another cluster ID, another id, or cannot be
// asked): a 409 with code join_refused and the reason.
var ErrJoinRefused = errors.New("cluster: join refused")

// classify maps an error to its API code (and so, by api.StatusOf, to
// its HTTP status). The errors of this package come first; every other
// error takes the status of drivers.StatusCode, the module's one map from
// errors to statuses, so that the node answers an error with the status
// its Go type reports. A Store reports "no leader here now" as
// drivers.ErrUnavailable: this package does not know the consensus
// library's errors.
func classify(err error) string {
	var maxBytes *http.MaxBytesError
	switch {
	case errors.As(err, &maxBytes):
		return api.CodeTooLarge
	case errors.Is(err, drivers.ErrInvalid):
		return api.CodeInvalid
	case errors.Is(err, errUnauthorized):
		return api.CodeUnauthorized
	case errors.Is(err, errForbidden):
		return api.CodeForbidden
	case errors.Is(err, errNotFound), errors.Is(err, ErrUnknownMember):
		return api.CodeNotFound
	case errors.Is(err, ErrJoinRefused):
		return api.CodeJoinRefused
	}
	return api.CodeOf(drivers.StatusCode(err))
}

// writeError answers with the status and JSON body for err. A
// *drivers.NotAcquiredError that knows the holder's remaining lease
// (HolderTTL > 0) sends it as holder_ttl_ms, in whole milliseconds.
func writeError(w http.ResponseWriter, err error) {
	code := classify(err)
	status := api.StatusOf(code)
	body := api.ErrorBody{Code: code, Message: err.Error()}
	var na *drivers.NotAcquiredError
	if errors.As(err, &na) && na.HolderTTL > 0 {
		ms := int64(na.HolderTTL / time.Millisecond)
		body.HolderTTLMillis = &ms
	}
	if na != nil {
		body.Holder, body.Key = na.Holder, na.Key
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

// invalidf builds a 400 error.
func invalidf(field, format string, args ...any) error {
	return &drivers.InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
