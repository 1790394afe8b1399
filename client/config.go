package client

import (
	"cmp"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/zerotal/lock/drivers"
)

// Defaults applied by New when a Config field is zero.
const (
	// DefaultTimeout bounds one call, failovers and retries included (a
	// waiting acquire gets its wait on top).
	DefaultTimeout = 10 * time.Second
	// DefaultWaitChunk is the longest wait_ms one AcquireWait request asks
	// for when the caller's context has no deadline; AcquireWait loops in
	// chunks of this size while the context lives.
	DefaultWaitChunk = 10 * time.Second
	// KeepPlace is how long a wait chunk that is not the last asks the
	// node to keep its place in the queue after it runs out: the next
	// chunk is sent at once, and finds the place still its own.
	KeepPlace = 2 * time.Second
	// MaxWait is the longest wait_ms the client ever sends (the server caps
	// it too).
	MaxWait = 5 * time.Minute
	// DefaultAttemptTimeout is how long a node may stay silent before a
	// call moves on to another one: about one election timeout of a
	// lockcluster with the default settings (500ms), after which a silent
	// leader has most likely been replaced.
	DefaultAttemptTimeout = 500 * time.Millisecond
	// minAttemptTimeout is the least AttemptTimeout Validate accepts: below
	// it the client would ask nodes for their status continually.
	minAttemptTimeout = 10 * time.Millisecond
)

// Config configures a Client. New copies it and never writes back into it.
type Config struct {
	// Addrs are the HTTP addresses of the cluster's nodes, "host:port" or
	// "http://host:port" (https too). At least one is required; any node
	// will do, more give failover. A bare host:port means https when any
	// TLS setting below is given, http otherwise.
	Addrs []string
	// Token is the bearer token, empty when the cluster has none.
	Token string
	// HTTPClient is used for every request when set; its redirects are
	// not followed (the server sends none, and a 3xx answer is returned
	// as an *APIError). Nil: a
	// client with pooled keep-alive connections sized for many concurrent
	// callers.
	HTTPClient *http.Client
	// Timeout bounds one call including failovers and retries. Zero:
	// DefaultTimeout.
	Timeout time.Duration
	// WaitChunk is the longest wait of one AcquireWait request: a longer
	// wait is sent as several, each but the last keeping its place in the
	// queue for the next (KeepPlace), so that a dead connection is
	// noticed within a chunk and the wait stays first come, first served.
	// Zero: DefaultWaitChunk.
	WaitChunk time.Duration
	// AttemptTimeout is how long a node may stay silent before a call
	// gives up on it and tries another. When a request has had no answer
	// for half of it, the client asks the same node for its status; when
	// that gets no answer within the other half, the node is taken to be
	// down (stopped, or cut off with its connections left open): the
	// request is abandoned, the node goes to the end of the list until it
	// answers again, and the others are asked who leads. A node that
	// answers its status is slow, not silent, and the request keeps
	// waiting for it (up to half of Timeout). Waiting acquires are watched
	// the same way for as long as the server holds them. Raise it on links
	// whose round trip is a sizeable part of it. Zero:
	// DefaultAttemptTimeout; otherwise at least 10ms.
	AttemptTimeout time.Duration
	// Logger receives debug lines about failovers. Nil: no logging.
	Logger *slog.Logger

	// TLS is the base TLS configuration for https nodes (New uses a copy).
	// Nil: Go's defaults (the system's roots).
	TLS *tls.Config
	// CAFile is a PEM file of the CA certificates that sign the nodes'
	// certificates; it replaces TLS.RootCAs. Empty: TLS.RootCAs, or the
	// system's roots.
	CAFile string
	// CertFile and KeyFile are a PEM client certificate and key, presented
	// to clusters that require one (mutual TLS). Both or neither.
	CertFile string
	KeyFile  string
	// ClusterID, when set, is sent with every request; a node of another
	// cluster refuses it (403, code "wrong_cluster") instead of serving it.
	ClusterID string
	// NoStream sends every request as its own plain HTTP/1.1 request.
	// By default a client without HTTPClient or TLS settings carries its
	// requests to each node over one multiplexed connection, the API
	// stream (package api/stream): the same requests and answers, with
	// far fewer system calls and no per-request header parsing. A node
	// that does not serve the stream is spoken to in plain HTTP anyway.
	NoStream bool
}

// tlsEnabled reports whether any TLS setting is given.
func (c Config) tlsEnabled() bool {
	return c.TLS != nil || c.CAFile != "" || c.CertFile != "" || c.KeyFile != ""
}

// defaultScheme is the scheme of an address given without one.
func (c Config) defaultScheme() string {
	if c.tlsEnabled() {
		return "https"
	}
	return "http"
}

// Validate reports whether the configuration can be used. Its errors match
// drivers.ErrInvalid, like every other configuration mistake, so that a
// caller can tell them from an unreachable cluster.
func (c Config) Validate() error {
	if len(c.Addrs) == 0 {
		return configError("Addrs", "at least one address is required")
	}
	for _, a := range c.Addrs {
		if _, err := baseURLWith(a, c.defaultScheme()); err != nil {
			return err
		}
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return configError("CertFile/KeyFile", "a client certificate needs both its file and its key file")
	}
	if c.HTTPClient != nil && c.tlsEnabled() {
		return configError("HTTPClient", "brings its own transport: set its TLS there, not in TLS, CAFile, CertFile or KeyFile")
	}
	if c.ClusterID != "" && strings.ContainsAny(c.ClusterID, " \t\r\n") {
		return configError("ClusterID", "must not contain spaces")
	}
	if c.Timeout < 0 {
		return configError("Timeout", "must not be negative")
	}
	if c.AttemptTimeout < 0 || (c.AttemptTimeout > 0 && c.AttemptTimeout < minAttemptTimeout) {
		return configError("AttemptTimeout", fmt.Sprintf("must be zero (the default, %s) or at least %s", DefaultAttemptTimeout, minAttemptTimeout))
	}
	if c.WaitChunk < 0 || c.WaitChunk > MaxWait {
		return configError("WaitChunk", fmt.Sprintf("must be within [0, %s]", MaxWait))
	}
	return nil
}

// configError is a configuration mistake; it matches drivers.ErrInvalid.
func configError(field, reason string) error {
	return &drivers.InvalidError{Field: "client config " + field, Reason: reason}
}

// withDefaults returns a copy of c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	c.Timeout = cmp.Or(c.Timeout, DefaultTimeout)
	c.WaitChunk = cmp.Or(c.WaitChunk, DefaultWaitChunk)
	c.AttemptTimeout = cmp.Or(c.AttemptTimeout, DefaultAttemptTimeout)
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	c.Addrs = append([]string(nil), c.Addrs...)
	return c
}

// baseURLWith turns "host:port" or "http(s)://host:port[/]" into
// "scheme://host:port", with scheme for a bare host:port.
func baseURLWith(addr, scheme string) (string, error) {
	a := strings.TrimSpace(addr)
	if a == "" {
		return "", configError("address", "must not be empty")
	}
	if !strings.Contains(a, "://") {
		a = scheme + "://" + a
	}
	u, err := url.Parse(a)
	if err != nil || u.Host == "" {
		// The address may hold credentials: never repeat it.
		return "", configError("address", "is not host:port or http(s)://host:port")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", configError("address", fmt.Sprintf("has the unsupported scheme %q (http or https)", u.Scheme))
	}
	if u.User != nil {
		return "", configError("address", "must not hold credentials; use Token")
	}
	return u.Scheme + "://" + u.Host, nil
}
