package cluster_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/zerotal/lock/cluster"
)

// A single node (a cluster of one) started in a temporary directory, and a
// lock taken through its HTTP API.
func ExampleNewNode() {
	dir, err := os.MkdirTemp("", "lockcluster-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node, err := cluster.NewNode(ctx, cluster.Config{
		ID:       "n1",
		DataDir:  dir,
		RaftAddr: "127.0.0.1:0",
		HTTPAddr: "127.0.0.1:0",
		// A cluster of this node alone, its raft port behind its own
		// secret (read it from a file or the environment in production).
		BootstrapSelf: true,
		RaftSecret:    "example-raft-secret-0123456789",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer node.Shutdown(context.Background())
	if err := node.WaitForLeader(ctx); err != nil {
		fmt.Println(err)
		return
	}

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	body := `{"key":"invoice:123","owner":"worker-7","ttl_ms":10000}`
	resp, err := client.Post("http://"+node.HTTPAddr()+"/v1/acquire", "application/json", strings.NewReader(body))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, strings.Contains(string(answer), `"owner":"worker-7"`))
	// Output: 200 true
}
