package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/drivers"
)

// lockCluster is three lockcluster agent processes on loopback.
type lockCluster struct {
	procs []*proc
	addrs []string
	c     *client.Client
}

// buildLockcluster builds cmd/lockcluster of the repository at repo.
func buildLockcluster(repo, dir string) (string, error) {
	bin := filepath.Join(dir, "lockcluster-bin")
	cmd := exec.Command("go", "build", "-C", repo, "-o", bin, "./cmd/lockcluster")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build lockcluster in %s: %w", repo, err)
	}
	return bin, nil
}

// startLockcluster starts three agents with data in dir, each with extra
// added to its flags (after the ones set here, so they win), and waits
// until a write succeeds.
func startLockcluster(ctx context.Context, bin, dir string, extra []string) (*lockCluster, error) {
	type member struct{ id, raft, http string }
	ms := make([]member, 3)
	addrs, err := freeAddrPairs(len(ms))
	if err != nil {
		return nil, err
	}
	lc := &lockCluster{}
	var peers, ids []string
	for i := range ms {
		ms[i] = member{fmt.Sprintf("n%d", i+1), addrs[i][0], addrs[i][1]}
		peers = append(peers, ms[i].id+"="+ms[i].raft+"="+ms[i].http)
		ids = append(ids, ms[i].id)
		lc.addrs = append(lc.addrs, ms[i].http)
	}
	lc.procs, err = startMembers("lockcluster", bin, dir, ids, func(i int) []string {
		m := ms[i]
		return []string{"agent", "--id", m.id, "--data-dir", filepath.Join(dir, m.id), "--raft-addr", m.raft,
			"--http-addr", m.http, "--bootstrap", strings.Join(peers, ","), "--log-level", "warn",
			"--raft-secret", "bench-raft-secret-0123456789"}
	}, extra)
	if err != nil {
		return nil, err
	}
	lc.c, err = client.New(client.Config{Addrs: lc.addrs})
	if err != nil {
		lc.stop()
		return nil, err
	}
	if err := waitReady(ctx, lc.procs, 2*time.Second, "lockcluster not writable", func(ctx context.Context) error {
		ok, err := take(ctx, lc.c, "health", "bench", time.Second)
		if err == nil && !ok {
			err = errors.New("the health lock was not granted")
		}
		return err
	}); err != nil {
		lc.stop()
		return nil, err
	}
	return lc, nil
}

func (lc *lockCluster) stop() {
	if lc.c != nil {
		_ = lc.c.Close()
	}
	stopAll(lc.procs)
}

// newWorker shares the one client (its connection pool) between workers.
func (lc *lockCluster) newWorker(context.Context) (workerLocker, error) {
	return clientWorker{c: lc.c}, nil
}

type clientWorker struct{ c *client.Client }

func (w clientWorker) acquire(ctx context.Context, key string) (func(context.Context) error, error) {
	owner := newOwner()
	if _, err := w.c.Acquire(ctx, drivers.Request{Keys: []string{key}, Owner: owner, TTL: 10 * time.Second, Wait: true}); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		_, err := w.c.Release(ctx, key, owner)
		return err
	}, nil
}

func (clientWorker) close() {}

// take acquires key for owner without waiting.
func take(ctx context.Context, c *client.Client, key, owner string, ttl time.Duration) (bool, error) {
	g, err := c.Acquire(ctx, drivers.Request{Keys: []string{key}, Owner: owner, TTL: ttl})
	return g.Acquired, err
}

// newOwner is a fresh owner token per acquisition, as package lock makes.
func newOwner() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (lc *lockCluster) members() []*proc { return lc.procs }
