// Command etcd compares lock cycles on a three-node lockcluster with lock
// cycles on a three-member etcd cluster (go.etcd.io/etcd/client/v3
// concurrency.Mutex), side by side in one run on this machine.
//
//	cd bench/etcd && go run . [-duration 10s] [-warmup 1s]
//
// It starts both clusters itself, on loopback ports, each member with a
// data directory of its own in a temp dir, and stops them by PID at the
// end: etcd from $PATH (Debian's etcd-server package), lockcluster built
// from this repository. Three scenarios run, each for -duration after
// -warmup, first on etcd and then on lockcluster:
//
//   - spread: 32 workers, each on its own key;
//   - hot: 8 workers on one key, each waiting until it gets it;
//   - serial: 1 worker, one key.
//
// One cycle is one successful acquire (waiting until it is granted) then
// one release. The table shows cycles/s, acquire and release latency p50
// and p99, and the lockcluster/etcd ratio of cycles/s.
//
// -dir /dev/shm puts both clusters' data on tmpfs, which shows how much
// of each system's latency is fsync. Exit status 3 means a target ratio
// (spread >= 5x, hot >= 10x with acquire p50 <= 10ms, serial >= 2x) was
// missed in this run.
//
// It is a module of its own so that the etcd client never becomes a
// dependency of the main module.
package main
