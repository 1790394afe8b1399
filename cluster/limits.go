package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/drivers"
)

// limitWaits caps the waiting acquires (wait_ms > 0) in progress on this
// node at Config.MaxWaits. Each one holds a goroutine and a connection for
// up to MaxWait, on the node that received it and on the leader it was
// forwarded to, so without a cap a flood of them grows memory without
// bound. Acquires without a wait pass untouched: they end quickly, and a
// release must always get through to free the waiters.
func (n *Node) limitWaits(h http.Handler) http.Handler {
	if n.cfg.MaxWaits == drivers.Unlimited {
		return h
	}
	limit := int64(n.cfg.MaxWaits)
	var inFlight atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
		// The handler reads the body again, from the start, and gives the
		// answers for a bad or oversized one.
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(raw), r.Body), r.Body}
		if err != nil || !waits(raw) {
			h.ServeHTTP(w, r)
			return
		}
		if inFlight.Add(1) > limit {
			inFlight.Add(-1)
			w.Header().Set("Retry-After", "1")
			writeError(w, fmt.Errorf("cluster: node %s already holds %d waiting acquires (its MaxWaits); retry later or acquire without waiting: %w",
				n.cfg.ID, limit, drivers.ErrFull))
			return
		}
		defer inFlight.Add(-1)
		h.ServeHTTP(w, r)
	})
}

// waits reports whether an acquire body asks to wait, reading it as the
// handler does (field names match case-insensitively and may be escaped,
// so no byte search will do). A body that does not parse does not wait:
// the handler refuses it.
func waits(body []byte) bool {
	var req api.AcquireRequest
	return json.Unmarshal(body, &req) == nil && req.WaitMillis > 0
}
