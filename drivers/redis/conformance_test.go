package redis_test

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/zerotal/lock/bench/manager"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/drivers/redis"
	"github.com/zerotal/lock/drivers/redis/redistest"
)

// urlHarness opens every handle from the server's URL, so each has its own
// connection pool and subscription, as separate processes would.
type urlHarness struct {
	url        string
	pipelineAt int
}

func (h urlHarness) NewDriver(ctx context.Context) (drivers.Driver, error) {
	return redis.Open(ctx, redis.Config{URL: h.url, PipelineAt: h.pipelineAt})
}

func TestConformance(t *testing.T) {
	srv := redistest.Start(t)
	driverstest.Run(t, func(t *testing.T) driverstest.Harness { return urlHarness{url: srv.URL()} })
}

// TestConformance_Pipelined sends every call in a batch (batch.go), which
// the default settings use only under concurrency.
func TestConformance_Pipelined(t *testing.T) {
	srv := redistest.Start(t)
	driverstest.Run(t, func(t *testing.T) driverstest.Harness {
		return urlHarness{url: srv.URL(), pipelineAt: 1}
	})
}

// clusterHarness gives every handle its own cluster client, passed in with
// New: the application-owned client case. The client is closed by the
// test, since the driver never closes a client it did not open.
type clusterHarness struct {
	t          *testing.T
	addrs      []string
	pipelineAt int
}

func (h clusterHarness) NewDriver(ctx context.Context) (drivers.Driver, error) {
	c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: h.addrs})
	h.t.Cleanup(func() { _ = c.Close() })
	if err := c.Ping(ctx).Err(); err != nil {
		return nil, err
	}
	return redis.New(c, redis.WithPipelineAt(h.pipelineAt))
}

// TestConformance_Cluster runs the whole suite against a three-node Redis
// Cluster, so keys spread over all nodes: every script touches two keys,
// which Redis Cluster only allows within one hash slot.
func TestConformance_Cluster(t *testing.T) {
	cluster := redistest.StartCluster(t, 3)
	driverstest.Run(t, func(t *testing.T) driverstest.Harness {
		return clusterHarness{t: t, addrs: cluster.Addrs()}
	})
}

// TestConformance_ClusterPipelined sends every call in a batch, which a
// cluster client's pipeline splits by node.
func TestConformance_ClusterPipelined(t *testing.T) {
	cluster := redistest.StartCluster(t, 3)
	driverstest.Run(t, func(t *testing.T) driverstest.Harness {
		return clusterHarness{t: t, addrs: cluster.Addrs(), pipelineAt: 1}
	})
}

// TestConformance_Shared runs the semaphore and read/write lock sections
// on a real redis-server, alone and pipelined.
func TestConformance_Shared(t *testing.T) {
	srv := redistest.Start(t)
	driverstest.RunShared(t, func(t *testing.T) driverstest.Harness { return urlHarness{url: srv.URL()} })
}

func TestConformance_SharedPipelined(t *testing.T) {
	srv := redistest.Start(t)
	driverstest.RunShared(t, func(t *testing.T) driverstest.Harness { return urlHarness{url: srv.URL(), pipelineAt: 1} })
}

// TestConformance_SharedCluster runs them on a three-node Redis Cluster:
// a shared key's hash and its fence counter share a slot.
func TestConformance_SharedCluster(t *testing.T) {
	cluster := redistest.StartCluster(t, 3)
	driverstest.RunShared(t, func(t *testing.T) driverstest.Harness {
		return clusterHarness{t: t, addrs: cluster.Addrs()}
	})
}

// BenchmarkShared: semaphore and read-lock cycles beside the mutex's
// (manager.BenchShared), on a real redis-server with the defaults.
func BenchmarkShared(b *testing.B) {
	srv := redistest.Start(b)
	d, err := redis.Open(context.Background(), redis.Config{URL: srv.URL()})
	if err != nil {
		b.Fatal(err)
	}
	manager.BenchShared(b, d, 2*time.Second)
}
