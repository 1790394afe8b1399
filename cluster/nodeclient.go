package cluster

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/client"
)

// nodeClientTimeout bounds one call of the node to another node's API
// (a join, asking a node what it is).
const nodeClientTimeout = 10 * time.Second

// apiClient is a client of the API of the node at addr (host:port, or a
// URL), speaking as this node does to its peers' HTTP ports: through the
// proxy transport (the node's TLS and dialer), with its cluster ID and
// token (none: "", for a route that needs none). The node uses the same
// client as applications, so there is one client of the node API. Close
// it after use.
func (n *Node) apiClient(addr, token string) (*client.Client, error) {
	return client.New(client.Config{
		Addrs:      []string{n.apiURL(addr)},
		Token:      token,
		ClusterID:  n.cfg.ClusterID,
		HTTPClient: &http.Client{Transport: n.proxy},
		Timeout:    nodeClientTimeout,
	})
}

// apiURL is addr with the scheme this node's peers serve their API in
// (https when the node has TLS), unless it names one.
func (n *Node) apiURL(addr string) string {
	if strings.Contains(addr, "://") {
		return addr
	}
	return n.httpScheme() + "://" + addr
}

// askNode reads GET /v1/node of the node at httpAddr, which needs no
// credential, and is sent none: the address comes from whoever calls
// join (or from the member map), and the operator token is no node's to
// read. With TLS the node's certificate proves itself in the handshake,
// which gives the node asked nothing it could replay.
func (n *Node) askNode(ctx context.Context, httpAddr string) (api.NodeInfo, error) {
	c, err := n.apiClient(httpAddr, "")
	if err != nil {
		return api.NodeInfo{}, err
	}
	defer c.Close()
	return c.NodeInfo(ctx, n.apiURL(httpAddr))
}
