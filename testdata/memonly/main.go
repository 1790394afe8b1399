// Command memonly is a program that uses the memory driver only. The test
// TestOpen_MemoryOnlyProgramLinksNoOtherBackend lists its dependencies: it
// must not link SQLite, Redis, the cluster client or raft.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/zerotal/lock"
)

func main() {
	ctx := context.Background()
	m, err := lock.Open(ctx, lock.Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer m.Close()
	err = m.Try(ctx, "job", time.Second, func(context.Context, *lock.Lock) error { return nil })
	fmt.Println("try:", err)
	_, err = lock.Open(ctx, lock.Config{Driver: "redis", Redis: lock.RedisConfig{URL: "redis://127.0.0.1:1"}})
	fmt.Println("redis:", err)

	// Pointed at a cluster (LOCKCLUSTER_ENDPOINTS) whose driver it does not
	// link: the Config ConfigFromEnv returns with its error does not open
	// (it would be the memory driver's zero Config otherwise).
	cfg, err := lock.ConfigFromEnv()
	fmt.Println("env:", errors.Is(err, lock.ErrNotLinked), err)
	em, err := lock.Open(ctx, cfg)
	fmt.Println("env open:", em != nil, errors.Is(err, lock.ErrNotLinked))
	if em != nil {
		_ = em.Close()
	}
}
