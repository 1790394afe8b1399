package api

import (
	"encoding/json"
	"time"
)

// Lock is one held key: the answer of GET /v1/lock, and each element of
// GET /v1/locks. The node serves it, the client returns it and the CLI
// prints it: one type from the table to the terminal.
type Lock struct {
	Key   string
	Owner string
	Fence uint64
	// Remaining is the time left on the grant by the leader's clock when
	// it answered. On the wire it is remaining_ms, whole milliseconds
	// rounded down (a grant about to expire shows 0).
	Remaining time.Duration
	// Waiters is the number of requests queued for the key.
	Waiters int
}

// lockJSON is Lock on the wire.
type lockJSON struct {
	Key             string `json:"key"`
	Owner           string `json:"owner"`
	Fence           uint64 `json:"fence"`
	RemainingMillis int64  `json:"remaining_ms"`
	Waiters         int    `json:"waiters"`
}

// MarshalJSON writes l with its remaining time in whole milliseconds.
func (l Lock) MarshalJSON() ([]byte, error) {
	return json.Marshal(lockJSON{Key: l.Key, Owner: l.Owner, Fence: l.Fence,
		RemainingMillis: max(int64(l.Remaining/time.Millisecond), 0), Waiters: l.Waiters})
}

// UnmarshalJSON reads l from its wire form.
func (l *Lock) UnmarshalJSON(b []byte) error {
	var w lockJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*l = Lock{Key: w.Key, Owner: w.Owner, Fence: w.Fence, Remaining: Duration(w.RemainingMillis), Waiters: w.Waiters}
	return nil
}

// MarshalJSON writes l with its locks as a JSON array, [] when there are
// none, never null.
func (l LockList) MarshalJSON() ([]byte, error) {
	type plain LockList // without this method
	if l.Locks == nil {
		l.Locks = []Lock{}
	}
	return json.Marshal(plain(l))
}
