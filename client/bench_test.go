package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/drivers/driverstest"
)

// BenchmarkClient_AcquireRelease measures what the client adds on top of
// plain HTTP: the baseline sends the same two JSON requests with net/http
// directly, on the same kind of pooled transport, to the same in-memory
// node. 32 parallel workers, one key each. The parent logs the ratio.
func BenchmarkClient_AcquireRelease(b *testing.B) {
	n := newFakeNode(b, "")
	var raw, cli float64
	b.Run("baseline=net/http", func(b *testing.B) {
		tr := newTransport()
		defer tr.CloseIdleConnections()
		hc := &http.Client{Transport: tr}
		var next atomic.Int64
		b.SetParallelism(32 / max(1, runtime.GOMAXPROCS(0)))
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			key := fmt.Sprintf("raw-%d", next.Add(1))
			for pb.Next() {
				post(b, hc, n.srv.URL+"/v1/acquire", api.AcquireRequest{Key: key, Owner: "o", TTLMillis: 10000})
				post(b, hc, n.srv.URL+"/v1/release", api.ReleaseRequest{Key: key, Owner: "o"})
			}
		})
		raw = float64(b.N) / time.Since(start).Seconds()
	})
	b.Run("client", func(b *testing.B) {
		c, err := New(Config{Addrs: []string{n.addr()}})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		var next atomic.Int64
		b.SetParallelism(32 / max(1, runtime.GOMAXPROCS(0)))
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			key := fmt.Sprintf("cli-%d", next.Add(1))
			ctx := context.Background()
			for pb.Next() {
				if _, ok, err := driverstest.Take(ctx, c, key, "o", 10*time.Second); err != nil || !ok {
					b.Errorf("Acquire = %v, %v", ok, err)
					return
				}
				if _, err := c.Release(ctx, key, "o"); err != nil {
					b.Errorf("Release: %v", err)
					return
				}
			}
		})
		cli = float64(b.N) / time.Since(start).Seconds()
	})
	if raw > 0 && cli > 0 {
		b.Logf("client/net-http cycles per second: %.2f (%.0f vs %.0f)", cli/raw, cli, raw)
	}
}

func post(b *testing.B, hc *http.Client, url string, body any) {
	buf, _ := json.Marshal(body)
	resp, err := hc.Post(url, "application/json", bytes.NewReader(buf))
	if err != nil {
		b.Error(err)
		return
	}
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Errorf("%s: %d", url, resp.StatusCode)
	}
}
