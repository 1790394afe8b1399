package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
)

// etcdCluster is three etcd members on loopback.
type etcdCluster struct {
	procs   []*proc
	clients []string
	cli     *clientv3.Client
	version string
}

// startEtcd starts three members with data in dir, each with extra added
// to its flags, and waits for quorum.
func startEtcd(ctx context.Context, bin, dir string, extra []string) (*etcdCluster, error) {
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("etcd not found (Debian package etcd-server): %w", err)
	}
	out, _ := exec.Command(path, "--version").Output()
	version := strings.TrimPrefix(strings.SplitN(string(out), "\n", 2)[0], "etcd Version: ")

	type member struct{ name, client, peer string }
	ms := make([]member, 3)
	addrs, err := freeAddrPairs(len(ms))
	if err != nil {
		return nil, err
	}
	ec := &etcdCluster{version: version}
	var initial, names []string
	for i := range ms {
		ms[i] = member{fmt.Sprintf("m%d", i+1), "http://" + addrs[i][0], "http://" + addrs[i][1]}
		initial = append(initial, ms[i].name+"="+ms[i].peer)
		names = append(names, ms[i].name)
		ec.clients = append(ec.clients, ms[i].client)
	}
	ec.procs, err = startMembers("etcd", path, dir, names, func(i int) []string {
		m := ms[i]
		return []string{"--name", m.name, "--data-dir", filepath.Join(dir, m.name),
			"--listen-client-urls", m.client, "--advertise-client-urls", m.client,
			"--listen-peer-urls", m.peer, "--initial-advertise-peer-urls", m.peer,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", "zerotal-bench", "--logger", "zap", "--log-outputs", "stderr"}
	}, extra)
	if err != nil {
		return nil, err
	}
	ec.cli, err = clientv3.New(clientv3.Config{Endpoints: ec.clients, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		ec.stop()
		return nil, err
	}
	// Quorum: a linearizable read succeeds.
	if err := waitReady(ctx, ec.procs, time.Second, "etcd has no quorum", func(ctx context.Context) error {
		_, err := ec.cli.Get(ctx, "health")
		return err
	}); err != nil {
		ec.stop()
		return nil, err
	}
	return ec, nil
}

func (ec *etcdCluster) stop() {
	if ec.cli != nil {
		_ = ec.cli.Close()
	}
	stopAll(ec.procs)
}

// newWorker opens a session (a lease kept alive) per worker, as an etcd
// user of concurrency.Mutex does.
func (ec *etcdCluster) newWorker(ctx context.Context) (workerLocker, error) {
	s, err := concurrency.NewSession(ec.cli, concurrency.WithTTL(10), concurrency.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	return &etcdWorker{s: s}, nil
}

type etcdWorker struct{ s *concurrency.Session }

func (w *etcdWorker) acquire(ctx context.Context, key string) (func(context.Context) error, error) {
	m := concurrency.NewMutex(w.s, "/bench/"+key)
	if err := m.Lock(ctx); err != nil {
		return nil, err
	}
	return m.Unlock, nil
}

func (w *etcdWorker) close() { _ = w.s.Close() }

func (ec *etcdCluster) members() []*proc { return ec.procs }
