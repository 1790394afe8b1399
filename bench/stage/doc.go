// Package stage measures where the time of one cluster acquire goes: a
// benchmark starts three real nodes in this process (default settings, each
// its own data directory on the same disk, loopback TCP) and runs serial
// acquires through the public Go API, beside plain HTTP requests and a bare
// fsync of a file on the same disk, and splits the serial p50 into the
// stages raft's own go-metrics, the node's acquire-wait histogram and the
// caller's clock can tell apart. See docs/PERFORMANCE.md, "Where one
// acquire's time goes".
//
// It lives in-process because raft reports its timings (commitTime,
// dispatchLog, the replication RPCs, the follower's storeLogs, the FSM's
// apply) only through go-metrics' process-wide sink, which a node does not
// export.
package stage
