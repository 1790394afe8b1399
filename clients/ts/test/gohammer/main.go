// Command gohammer is the Go side of the TypeScript client's cross-language
// test: workers of this process take one key of a lockcluster over and over
// with package lock, and tell the test's referee, over HTTP, each time they
// enter and leave the critical section with the fence of their grant. The
// referee (clients/ts/test/referee.test.mjs) checks the holders of both
// languages together.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/zerotal/lock"
	_ "github.com/zerotal/lock/drivers/cluster"
)

func main() {
	addrs := flag.String("addrs", "", "the cluster's HTTP addresses, comma separated")
	token := flag.String("token", "", "the cluster's bearer token")
	key := flag.String("key", "", "the key to take")
	claim := flag.String("claim", "mutex", "mutex, semaphore (of 2) or rw (every third a writer)")
	workers := flag.Int("workers", 3, "concurrent workers")
	rounds := flag.Int("rounds", 20, "grants per worker")
	referee := flag.String("referee", "", "the referee's base URL")
	flag.Parse()
	if err := run(*addrs, *token, *key, *claim, *workers, *rounds, *referee); err != nil {
		fmt.Fprintln(os.Stderr, "gohammer:", err)
		os.Exit(1)
	}
}

func run(addrs, token, key, claim string, workers, rounds int, referee string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := lock.Open(ctx, lock.Config{Driver: "cluster", Holder: "go", Cluster: lock.ClusterConfig{Addrs: strings.Split(addrs, ","), Token: token}})
	if err != nil {
		return err
	}
	defer m.Close()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				mode, opts := modeOf(claim, w*rounds+i)
				err := m.Block(ctx, key, 10*time.Second, func(ctx context.Context, l *lock.Lock) error {
					if err := tell(ctx, referee+"/enter", mode, l.Fence()); err != nil {
						return err
					}
					time.Sleep(time.Millisecond) // the section's work: a holder stays a moment
					return tell(ctx, referee+"/leave", mode, l.Fence())
				}, append(opts, lock.WithTimeout(30*time.Second))...)
				if err != nil {
					errs <- fmt.Errorf("worker %d round %d: %w", w, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// modeOf is the claim of the i-th grant: its name for the referee and
// its options.
func modeOf(claim string, i int) (string, []lock.Option) {
	switch {
	case claim == "semaphore":
		return "semaphore", []lock.Option{lock.Semaphore(2)}
	case claim == "rw" && i%3 == 0:
		return "write", []lock.Option{lock.Write()}
	case claim == "rw":
		return "read", []lock.Option{lock.Read()}
	}
	return "mutex", nil
}

// tell reports an entry or a leave to the referee; its refusal (a rule
// broken) fails the worker.
func tell(ctx context.Context, url, mode string, fence uint64) error {
	body, _ := json.Marshal(map[string]any{"lang": "go", "mode": mode, "fence": fence})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("referee refused %s: %s", url, resp.Status)
	}
	return nil
}
