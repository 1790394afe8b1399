package api

// Paths of the /v1 endpoints.
const (
	// PathAcquire takes one key or several, as a mutex, a semaphore's
	// slot or a read/write lock's side (AcquireRequest).
	PathAcquire      = "/v1/acquire"
	PathRelease      = "/v1/release"
	PathExtend       = "/v1/extend"
	PathForceRelease = "/v1/force-release"
	PathLock         = "/v1/lock"
	PathLocks        = "/v1/locks"
	PathStatus       = "/v1/status"
	PathJoin         = "/v1/join"
	PathLeave        = "/v1/leave"
	// PathNode is what a node says of itself (NodeInfo), answered by the
	// node asked, never forwarded, to any caller: it holds nothing that
	// the wrong-cluster answer does not already give away.
	PathNode = "/v1/node"
)

// PathMetrics is a node's Prometheus exposition, outside /v1 (it is no
// part of the lock API's schema) but behind the same token.
const PathMetrics = "/metrics"
