// Package apifuzz is the oracle of the HTTP API's fuzz targets, shared by
// the targets that run against an in-memory Store (package httpapi, fast)
// and those that run against a real single-node cluster (package
// cluster). For every input it checks, independently of the handlers: no
// panic; a documented status; a JSON body of the documented shape; 200
// for a valid request and only for one; a 400 that names the problem;
// and every few inputs, that the server still grants and releases a lock.
//
// The limits it checks against (body size, list limits, field lengths)
// are the documented ones, written here again on purpose: a handler that
// drifts from them fails the targets.
package apifuzz
