package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/drivers"
)

// leaderHTTP returns the leader's HTTP address from the replicated member
// map.
func (n *Node) leaderHTTP() (string, error) {
	_, id := n.raft.LeaderWithID()
	if id == "" {
		return "", unavailable("forward", errors.New("no leader known (election in progress or no quorum)"))
	}
	addr, ok := n.fsm.Member(string(id))
	if !ok || addr == "" {
		return "", unavailable("forward", errors.New("leader "+string(id)+" has not published its HTTP address yet"))
	}
	return addr, nil
}

// forward reverse-proxies r, body included, to the leader at addr. The
// Authorization header travels with it; the leader checks it again.
func (n *Node) forward(w http.ResponseWriter, r *http.Request, addr string) {
	target := &url.URL{Scheme: n.httpScheme(), Host: addr}
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = r.Host
			pr.Out.Header.Set(api.HeaderForwardedBy, n.cfg.ID)
		},
		Transport: n.proxy,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			var maxBytes *http.MaxBytesError
			if errors.As(err, &maxBytes) {
				// The transport's error names the sockets of this hop: keep
				// them out of the answer, which must read as the leader's.
				writeError(w, fmt.Errorf("cluster: request body over %d bytes: %w", maxBodyBytes, maxBytes))
				return
			}
			writeError(w, drivers.Unavailable("forward to leader "+addr, err))
		},
	}
	rp.ServeHTTP(w, r)
}

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
