package api

// The paths and bodies the Go client still sends until it moves to the one
// POST /v1/acquire; a node serves them with the one acquire handler. They
// go with that move.

const (
	PathAcquireShared = "/v1/acquire-shared"
	PathAcquireAll    = "/v1/acquire-all"
)

// AcquireSharedRequest is an AcquireRequest naming Semaphore or Mode.
type AcquireSharedRequest struct {
	AcquireRequest
	Semaphore uint32 `json:"semaphore,omitempty"`
	Mode      string `json:"mode,omitempty"`
}

// AcquireAllRequest is an AcquireRequest naming Keys.
type AcquireAllRequest struct {
	Keys       []string `json:"keys"`
	Owner      string   `json:"owner"`
	TTLMillis  int64    `json:"ttl_ms"`
	WaitMillis int64    `json:"wait_ms,omitempty"`
	KeepMillis int64    `json:"keep_ms,omitempty"`
}

// AcquireAllResponse is the AcquireResponse of an AcquireAllRequest.
type AcquireAllResponse struct {
	Owner     string     `json:"owner"`
	TTLMillis int64      `json:"ttl_ms"`
	Locks     []KeyFence `json:"locks"`
}

// MaxAcquireAllKeys is MaxAcquireKeys.
const MaxAcquireAllKeys = MaxAcquireKeys
