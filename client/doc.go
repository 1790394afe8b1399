// Package client is the Go client of a lockcluster's HTTP API (v1).
//
// A *Client implements drivers.Driver, drivers.Extender and drivers.Waiter,
// so a three-node cluster is one more backend for package lock:
//
//	c, err := client.New(client.Config{Addrs: []string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"}})
//	m := lock.New(c)
//
// The client finds the leader (from /v1/status, or by following any node's
// forwarding), keeps pooled keep-alive connections to it, and fails over to
// the other addresses on connection errors and 503 answers. It retries only
// requests that are safe to repeat: an acquire by the same owner is a
// refresh, release and extend are owner-guarded, force-release, join and
// leave are idempotent.
//
// The request and response bodies are the types of package api, which
// the server shares.
//
// Errors map back to the sentinels of package drivers: 409 is a plain
// "not acquired" (ok=false from Acquire; as an error, an *APIError that
// unwraps to a *drivers.NotAcquiredError with the holder's remaining
// lease in HolderTTL), 503 and connection failures match
// drivers.ErrUnavailable, 400 and 413 match drivers.ErrInvalid, 429 matches
// drivers.ErrFull and 401 matches ErrUnauthorized. The token never appears
// in an error or a log line.
//
// # Silent nodes and unknown outcomes
//
// A node that is stopped, or cut off with its connections left open, does
// not refuse anything: it just never answers. When a request has had no
// answer for half of Config.AttemptTimeout (default 500ms, about one
// election timeout of a lockcluster), the client asks the same node for
// its status; when that gets no answer within the other half, or the node
// is a follower that forwards to a leader that does not answer, the
// request is abandoned and tried on another node. The silent node is left
// out of later calls until it answers again (also when the caller's own
// deadline cut the call short while it was silent), and the other nodes
// are asked at once who leads, so a stopped leader costs calls about one
// election, not as long as it stays stopped. A node that answers its
// status is slow, not silent: the request keeps waiting for it, up to half
// of Config.Timeout (a waiting acquire, which the server holds by design,
// as long as its wait).
//
// An abandoned request may still take effect. When a call that changes
// state fails after some attempt reached a node and got no answer (or a
// 503, which a leader also gives when it loses its leadership with the
// request already in its log), the error matches drivers.ErrOutcomeUnknown
// as well as drivers.ErrUnavailable; drivers.ErrUnavailable alone means
// that no attempt reached any node. A Release whose retry finds the key no
// longer held, after an earlier attempt got no answer, returns such an
// error instead of false, which also matches drivers.ErrNoLongerHeld:
// that earlier attempt may be the one that released it, and either way
// the owner holds the key no more. If ctx ends, the error wraps ctx.Err(), and a request
// already sent may have taken effect all the same.
//
// # TLS
//
// For a cluster that serves https, give the CA that signs the nodes'
// certificates (CAFile, or a *tls.Config in TLS), and for mutual TLS a
// client certificate (CertFile, KeyFile); bare host:port addresses then
// mean https:
//
//	c, err := client.New(client.Config{
//		Addrs:  []string{"10.0.0.1:7001", "10.0.0.2:7001", "10.0.0.3:7001"},
//		CAFile: "/etc/lock/ca.pem", CertFile: "/etc/lock/app.pem", KeyFile: "/etc/lock/app-key.pem",
//		ClusterID: "prod-locks",
//	})
//
// A handshake that cannot succeed (an untrusted certificate, a missing
// client certificate, https against a plain node or the reverse) is
// ErrTLS at once, with what to set, and is not retried on other nodes.
// With ClusterID set, a node of another cluster answers 403 and the call
// fails with ErrWrongCluster.
package client
