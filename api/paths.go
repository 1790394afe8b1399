package api

// Paths of the /v1 endpoints.
const (
	PathAcquire      = "/v1/acquire"
	PathRelease      = "/v1/release"
	PathExtend       = "/v1/extend"
	PathForceRelease = "/v1/force-release"
	PathLock         = "/v1/lock"
	PathLocks        = "/v1/locks"
	PathStatus       = "/v1/status"
	PathJoin         = "/v1/join"
	PathLeave        = "/v1/leave"
)
