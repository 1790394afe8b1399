package api

import "net/http"

// Codes of ErrorBody, each answered with the status StatusOf gives.
const (
	// CodeInvalid: the request is malformed or a field is out of range
	// (400; also 405 for a wrong method and 408 for a request sent too
	// slowly). The message names the field or query parameter at fault.
	CodeInvalid = "invalid"
	// CodeUnauthorized: the bearer token is missing or wrong (401).
	CodeUnauthorized = "unauthorized"
	// CodeWrongCluster: HeaderClusterID names another cluster (403).
	CodeWrongCluster = "wrong_cluster"
	// CodeForbidden: the credential is known but lacks the right the
	// request needs, or the key is outside its prefixes (403). The
	// message names the missing right.
	CodeForbidden = "forbidden"
	// CodeJoinRefused: a join the leader refused, because the node
	// asked has raft state, belongs to another cluster, answers to
	// another id or cannot be asked (409). The message names the reason.
	CodeJoinRefused = "join_refused"
	// CodeNotFound: no such lock, no such member, or no such endpoint
	// (404).
	CodeNotFound = "not_found"
	// CodeNotAcquired: another owner holds the key, or a wait timed out
	// (409), with ErrorBody.HolderTTLMillis when known.
	CodeNotAcquired = "not_acquired"
	// CodeTooLarge: the body is over the size limit (413).
	CodeTooLarge = "too_large"
	// CodeFull: a configured limit of keys or waiters is reached (429).
	CodeFull = "full"
	// CodeUnavailable: no leader, no quorum, leadership moved, or the node
	// is shutting down (503): safe to retry, on this node or another.
	CodeUnavailable = "unavailable"
	// CodeUnsupported: the cluster cannot serve the request yet: a
	// semaphore or read/write lock while a member runs a release without
	// them (501). The message names the member.
	CodeUnsupported = "unsupported"
	// CodeInternal: anything else (500).
	CodeInternal = "internal"
)

// StatusOf returns the HTTP status an error with code is answered with;
// 500 for an unknown code.
func StatusOf(code string) int {
	switch code {
	case CodeInvalid:
		return http.StatusBadRequest
	case CodeUnauthorized:
		return http.StatusUnauthorized
	case CodeWrongCluster, CodeForbidden:
		return http.StatusForbidden
	case CodeJoinRefused:
		return http.StatusConflict
	case CodeNotFound:
		return http.StatusNotFound
	case CodeNotAcquired:
		return http.StatusConflict
	case CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeFull:
		return http.StatusTooManyRequests
	case CodeUnavailable:
		return http.StatusServiceUnavailable
	case CodeUnsupported:
		return http.StatusNotImplemented
	}
	return http.StatusInternalServerError
}

// CodeOf returns the code of an error answer that came without one (from
// a proxy in between, say), judged by its status alone. A 502 or 504 is
// CodeUnavailable; a 403 is CodeForbidden, never CodeWrongCluster, which
// only the body can say.
func CodeOf(status int) string {
	switch status {
	case http.StatusBadRequest:
		return CodeInvalid
	case http.StatusUnauthorized:
		return CodeUnauthorized
	case http.StatusForbidden:
		return CodeForbidden
	case http.StatusNotFound:
		return CodeNotFound
	case http.StatusConflict:
		return CodeNotAcquired
	case http.StatusRequestEntityTooLarge:
		return CodeTooLarge
	case http.StatusTooManyRequests:
		return CodeFull
	case http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
		return CodeUnavailable
	case http.StatusNotImplemented:
		return CodeUnsupported
	}
	return CodeInternal
}
