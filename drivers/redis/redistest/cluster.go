package redistest

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// totalSlots is the number of hash slots of a Redis Cluster.
const totalSlots = 16384

// Cluster is a Redis Cluster of several redis-server processes on loopback,
// the hash slots split evenly between them, without replicas.
type Cluster struct {
	Nodes []*Server
}

// StartCluster starts n cluster-enabled servers, joins them and waits
// until every node reports the cluster healthy.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{}
	for i := 0; i < n; i++ {
		dir := t.TempDir()
		c.Nodes = append(c.Nodes, Start(t,
			"--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(dir, "nodes.conf"),
			"--cluster-node-timeout", "2000",
		))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	first := c.Nodes[0].Client()
	for i, node := range c.Nodes {
		if i > 0 {
			if err := first.ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(node.Port())).Err(); err != nil {
				t.Fatalf("CLUSTER MEET %s: %v", node.Addr(), err)
			}
		}
		lo, hi := i*totalSlots/n, (i+1)*totalSlots/n-1
		if err := node.Client().ClusterAddSlotsRange(ctx, lo, hi).Err(); err != nil {
			t.Fatalf("CLUSTER ADDSLOTSRANGE %d %d on %s: %v", lo, hi, node.Addr(), err)
		}
	}
	for _, node := range c.Nodes {
		waitClusterOK(ctx, t, node.Client(), n)
	}
	return c
}

// Addrs are the nodes' host:port, as a cluster client wants them.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// Client returns a cluster client that is closed when the test ends.
func (c *Cluster) Client(t testing.TB) *goredis.ClusterClient {
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

func waitClusterOK(ctx context.Context, t testing.TB, c *goredis.Client, n int) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	want := "cluster_known_nodes:" + strconv.Itoa(n)
	for {
		info, err := c.ClusterInfo(ctx).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, want) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("cluster not healthy in time: %v\n%s", err, info)
		case <-tick.C:
		}
	}
}
