package cluster

import (
	"context"
	"net"
	"net/http"
	"time"
)

// newProxyTransport is the HTTP transport a node uses to reach its peers'
// APIs (forwarding, join); dialAddr rewrites the address it dials
// (Config.DialAddr).
func newProxyTransport(dialAddr func(string) string) *http.Transport {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     30 * time.Second,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return d.DialContext(ctx, network, dialAddr(addr))
		},
	}
}
