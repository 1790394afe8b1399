package api

import (
	"encoding/json"
	"time"
)

// Lock is one held key: the answer of GET /v1/lock, and each element of
// GET /v1/locks. The node serves it, the client returns it and the CLI
// prints it: one type from the table to the terminal.
type Lock struct {
	Key string
	// Owner is the holder's owner as its request named it. On a node with
	// credentials it is shown whole only to the credential that made the
	// grant and to one that may force-release the key; to another it
	// comes with its token as 32 zeros ("000…0:HOLDER"), or "" when it
	// has no holder after a token. The token would give that credential
	// nothing anyway: a node records each owner with its credential, and
	// a release or extend reaches the grants of its own credential only.
	// So with Holders[i].Owner and Queue[i].Owner.
	Owner string
	// Holder is who the owner says holds the grant (the description after
	// its token, drivers.HolderOf); "" when it says nothing.
	Holder string
	Fence  uint64
	// Remaining is the time left on the grant by the leader's clock when
	// it answered. On the wire it is remaining_ms, whole milliseconds
	// rounded down (a grant about to expire shows 0).
	Remaining time.Duration
	// Age is how long the grant has been held, where the backend knows
	// it (a cluster node: since the entry that made it, as that node
	// applied it); 0 otherwise. On the wire it is age_ms, whole
	// milliseconds rounded down, absent when 0.
	Age time.Duration
	// Waiters is the number of requests queued for the key; Queue names
	// them in order where the backend tells them.
	Waiters int
	// Kind is "semaphore" or "rwlock" for a shared key, "" for a mutex;
	// Limit a semaphore's most holders. Owner, Fence and Remaining are
	// then those of the holder whose grant ends first and Holders every
	// holder (by fence). Queue is the waiters in order, of any kind.
	Kind    string
	Limit   uint32
	Holders []Holder
	Queue   []Waiting
}

// Holder is one grant of a shared key.
type Holder struct {
	Owner     string
	Holder    string // as Lock.Holder
	Fence     uint64
	Remaining time.Duration
	// Mode is ModeRead or ModeWrite for a read/write lock, "" for a
	// semaphore.
	Mode string
	Age  time.Duration // as Lock.Age
}

// WaiterHolder is Waiting.Holder for a waiter whose owner is owner and
// names holder (drivers.HolderOf): "" when holder is the owner itself.
func WaiterHolder(owner, holder string) string {
	if holder == owner {
		return ""
	}
	return holder
}

// Waiting is one queued owner of a key, in queue order.
type Waiting struct {
	Owner string `json:"owner"`
	// Holder is who the owner says it is (drivers.HolderOf), as
	// Lock.Holder, when that is not the owner itself (WaiterHolder): a
	// full queue of long owners is not written twice.
	Holder string `json:"holder,omitempty"`
	Mode   string `json:"mode,omitempty"`
	// AgeMillis is how long it has waited, in whole milliseconds rounded
	// down, where the backend knows it (a cluster node: since the entry
	// that queued it, as that node applied it); 0 otherwise.
	AgeMillis int64 `json:"age_ms,omitempty"`
}

// Kinds of a shared key (Lock.Kind).
const (
	KindSemaphore = "semaphore"
	KindRWLock    = "rwlock"
)

// lockJSON is Lock on the wire.
type lockJSON struct {
	Key             string       `json:"key"`
	Owner           string       `json:"owner"`
	Holder          string       `json:"holder,omitempty"`
	Fence           uint64       `json:"fence"`
	RemainingMillis int64        `json:"remaining_ms"`
	AgeMillis       int64        `json:"age_ms,omitempty"`
	Waiters         int          `json:"waiters"`
	Kind            string       `json:"kind,omitempty"`
	Limit           uint32       `json:"limit,omitempty"`
	Holders         []holderJSON `json:"holders,omitempty"`
	Queue           []Waiting    `json:"queue,omitempty"`
}

type holderJSON struct {
	Owner           string `json:"owner"`
	Holder          string `json:"holder,omitempty"`
	Fence           uint64 `json:"fence"`
	RemainingMillis int64  `json:"remaining_ms"`
	Mode            string `json:"mode,omitempty"`
	AgeMillis       int64  `json:"age_ms,omitempty"`
}

func millisDown(d time.Duration) int64 { return max(int64(d/time.Millisecond), 0) }

// MarshalJSON writes l with its remaining times in whole milliseconds.
func (l Lock) MarshalJSON() ([]byte, error) {
	w := lockJSON{Key: l.Key, Owner: l.Owner, Holder: l.Holder, Fence: l.Fence,
		RemainingMillis: millisDown(l.Remaining), AgeMillis: millisDown(l.Age), Waiters: l.Waiters, Kind: l.Kind, Limit: l.Limit, Queue: l.Queue}
	for _, h := range l.Holders {
		w.Holders = append(w.Holders, holderJSON{Owner: h.Owner, Holder: h.Holder, Fence: h.Fence, RemainingMillis: millisDown(h.Remaining), Mode: h.Mode,
			AgeMillis: millisDown(h.Age)})
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads l from its wire form.
func (l *Lock) UnmarshalJSON(b []byte) error {
	var w lockJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*l = Lock{Key: w.Key, Owner: w.Owner, Holder: w.Holder, Fence: w.Fence, Remaining: Duration(w.RemainingMillis), Age: Duration(w.AgeMillis),
		Waiters: w.Waiters, Kind: w.Kind, Limit: w.Limit, Queue: w.Queue}
	for _, h := range w.Holders {
		l.Holders = append(l.Holders, Holder{Owner: h.Owner, Holder: h.Holder, Fence: h.Fence, Remaining: Duration(h.RemainingMillis), Mode: h.Mode,
			Age: Duration(h.AgeMillis)})
	}
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
