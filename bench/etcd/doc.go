// Command etcd compares lock cycles on a three-node lockcluster with lock
// cycles on a three-member etcd cluster (go.etcd.io/etcd/client/v3
// concurrency.Mutex), side by side in one run on this machine.
//
//	cd bench/etcd && go run . [-duration 10s] [-warmup 1s] [-slices 4] \
//		[-lockcluster-args "--raft-log wal"] [-etcd-args "..."]
//
// It starts both clusters itself, on loopback ports, each member with a
// data directory of its own in a temp dir and its default configuration
// (both fsync every commit), and stops them by PID at the end: etcd from
// $PATH (Debian's etcd-server package; `make bench-peers` installs it when
// missing), lockcluster built from this repository. -lockcluster-args and
// -etcd-args add flags to every member, so that a run can compare, say,
// lockcluster's raft log stores without a change here.
//
// Three scenarios run, each for -duration per system:
//
//   - spread: 32 workers, each on its own key;
//   - hot: 8 workers on one key, each waiting until it gets it;
//   - serial: 1 worker, one key.
//
// A scenario's measured time is cut into -slices slices, each after
// -warmup, and the systems alternate: etcd then lockcluster in even
// slices, lockcluster then etcd in odd ones, so that what else the
// machine does falls on both alike.
//
// One cycle is one successful acquire (waiting until it is granted) then
// one release. The table shows cycles/s, acquire and release latency p50
// and p99, the CPU time per cycle (user + system, from /proc/PID/stat of
// the three members, and getrusage of this process, which runs the
// clients), and the lockcluster/etcd ratio of cycles/s. A second table
// checks lockcluster's targets, each with its margin: spread >= 5x; hot
// >= 15x with acquire p50 <= 5ms; serial >= 2x with acquire p50 <=
// 0.5ms. Exit status 3 means one was missed in this run.
//
// Before the scenarios both clusters are left at rest for -idle and their
// members' CPU time per second is shown: what heartbeats and the runtime
// cost, which at low cycle rates is a good part of cpu/cycle.
//
// -dir /dev/shm puts both clusters' data on tmpfs, which shows how much
// of each system's latency is fsync.
//
// It is a module of its own so that the etcd client never becomes a
// dependency of the main module.
package main
