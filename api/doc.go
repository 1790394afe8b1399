// Package api is the wire schema of a lockcluster's HTTP API, version 1:
// the request and response bodies of the /v1 endpoints, the error body and
// its codes, the header names, and the conversions between durations and
// the integer milliseconds the API carries. The server (package cluster)
// and the Go client (package client) both use these types, so the schema
// is written once.
//
// # Conventions
//
// Bodies are JSON objects with snake_case names. Durations travel as
// integer milliseconds in fields whose JSON name ends in _ms; the Go field
// ends in Millis (ttl_ms is TTLMillis, wait_ms is WaitMillis). Millis and
// Duration convert. A field marked omitempty may be left out, and a
// missing number means 0: an acquire without wait_ms does not wait.
//
// The server refuses unknown fields in a request (400); a client should
// ignore unknown fields in an answer, so that a newer server may add some.
// schema/v1.json is this schema as JSON Schema (draft 2020-12), checked
// against these types by a test.
//
// # Endpoints
//
//	POST /v1/acquire        AcquireRequest       -> AcquireResponse
//	POST /v1/release        ReleaseRequest       -> ReleaseResponse
//	POST /v1/extend         ExtendRequest        -> ExtendResponse
//	POST /v1/force-release  ForceReleaseRequest  -> ReleaseResponse
//	GET  /v1/lock?key=K                          -> Lock
//	GET  /v1/locks?prefix=P&limit=N              -> LockList
//	GET  /v1/watch?key=K&seen=S&wait_ms=N        -> Lock, once K's holders change (PathWatch)
//	GET  /v1/status                              -> Status
//	POST /v1/join           JoinRequest          -> {}
//	POST /v1/leave          LeaveRequest         -> {}
//	GET  /readyz                                 -> Ready (200 or 503)
//
// Every other answer is an ErrorBody with one of the Code* codes; StatusOf
// gives the HTTP status of each.
package api
