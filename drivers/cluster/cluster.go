// Package cluster registers the "cluster" driver of lock.Open: a client of
// lockcluster nodes, built on package client. Import it for its side
// effect:
//
//	import _ "github.com/zerotal/lock/drivers/cluster"
//
// The driver lives in a package of its own, rather than in package client,
// so that importing client (to script a cluster, or to build a driver by
// hand with client.New) changes nothing global, and so that every driver
// of lock.Open is imported the same way, from drivers/<name>.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/drivers"
)

func init() { drivers.Register("cluster", Open) }

// Open returns a client of the nodes o.Cluster names, once one of them has
// answered its status, so that a cluster nobody can reach is reported here
// rather than by the first lock call. ctx bounds the check; when it has no
// deadline, client.DefaultTimeout does (the client's bound of one call).
// The nodes are asked in turn, each given an equal share of the time left.
//
// When no node answers the error matches drivers.ErrUnavailable. A node
// that answers with a refusal ends the check at once: a token it rejects
// gives client.ErrUnauthorized, a TLS mismatch client.ErrTLS, a node of
// another cluster client.ErrWrongCluster. When ctx itself ends first, the
// error is ctx's.
func Open(ctx context.Context, o drivers.OpenOptions) (drivers.Driver, error) {
	c, err := client.New(client.Config{
		Addrs: o.Cluster.Addrs, Token: o.Cluster.Token, Logger: o.Logger,
		CAFile: o.Cluster.CAFile, CertFile: o.Cluster.CertFile, KeyFile: o.Cluster.KeyFile,
		ClusterID: o.Cluster.ClusterID,
	})
	if err != nil {
		return nil, err
	}
	if err := contact(ctx, c); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// contact asks each node for its status until one answers. A node that
// refuses the connection, or stays silent for its share of the time, is
// down; one that answers anything else is asked again through the client's
// own call, which knows what each failure means (a refused token, a TLS
// mismatch) and whether it is worth waiting for.
func contact(ctx context.Context, c *client.Client) error {
	bounded := ctx
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		bounded, cancel = context.WithTimeout(ctx, client.DefaultTimeout)
		defer cancel()
	}
	deadline, _ := bounded.Deadline()
	addrs := c.Addrs()
	var errs []error
	for i, addr := range addrs {
		share := time.Until(deadline) / time.Duration(len(addrs)-i)
		nctx, cancel := context.WithTimeout(bounded, share)
		_, err := c.NodeStatus(nctx, addr)
		silent := nctx.Err() != nil
		cancel()
		var op *net.OpError
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("contact the cluster: %w", ctx.Err())
		case silent || (errors.As(err, &op) && op.Op == "dial"):
			errs = append(errs, err)
			continue
		}
		if _, err := c.Status(bounded); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("contact the cluster: %w", ctx.Err())
			}
			if bounded.Err() != nil {
				return drivers.Unavailable("contact the cluster", err)
			}
			return fmt.Errorf("contact the cluster: %w", err)
		}
		return nil
	}
	return drivers.Unavailable("contact the cluster", fmt.Errorf("no node answers: %w", errors.Join(errs...)))
}
