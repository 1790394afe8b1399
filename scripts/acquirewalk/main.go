// Command acquirewalk counts the files of this module whose code runs for one
// acquire, from the client to the engine: a warmed-up single-node cluster
// in process, coverage counters cleared just before one Acquire and
// written just after. Run by scripts/acquire-walk.sh, which builds it with coverage.
package main

import (
	"context"
	"log"
	"os"
	"path/filepath"
	"runtime/coverage"
	"time"

	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/cluster"
	"github.com/zerotal/lock/drivers"
)

func main() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "walk")
	defer os.RemoveAll(dir)
	n, err := cluster.NewNode(ctx, cluster.Config{
		ID: "n1", DataDir: filepath.Join(dir, "n1"), RaftAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		BootstrapSelf: true, RaftSecret: "acquirewalk-raft-secret-0123456789",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer n.Shutdown(ctx)
	if err := n.WaitForLeader(ctx); err != nil {
		log.Fatal(err)
	}
	c, err := client.New(client.Config{Addrs: []string{n.HTTPAddr()}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < 50; i++ { // warm up: leader known, connection open, node ready
		if g, err := c.Acquire(ctx, drivers.Request{Keys: []string{"warm"}, Owner: "o", TTL: time.Minute}); err == nil && g.Acquired {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // let the takeover's and warm-up's background work settle
	if err := coverage.ClearCounters(); err != nil {
		log.Fatal(err)
	}
	if g, err := c.Acquire(ctx, drivers.Request{Keys: []string{"k"}, Owner: "o", TTL: time.Minute}); err != nil || !g.Acquired {
		log.Fatalf("acquire: %v %v", g.Acquired, err)
	}
	out := os.Getenv("WALK_DIR")
	if err := coverage.WriteMetaDir(out); err != nil {
		log.Fatal(err)
	}
	if err := coverage.WriteCountersDir(out); err != nil {
		log.Fatal(err)
	}
}
