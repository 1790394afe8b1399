// Package redislock compares the zerotal lock Redis driver with
// github.com/bsm/redislock, side by side in one run on the same
// redis-server. It is a separate module so that the peer library never
// becomes a dependency of the main module.
//
//	cd bench/redislock && go test -run '^$' -bench . -benchtime 10s
//
// One cycle is one successful acquire followed by one release. "spread" is
// 32 workers, each on its own key; "hot" is 8 workers contending for one
// key, each waiting until it gets it (redislock polls every millisecond,
// the zerotal driver is woken by pub/sub). Every sub-benchmark reports
// cycles/s, the acquire latency p50 and p99 and, for "hot", the hand-off
// latency from the start of a release to the next holder's grant; the
// parent logs the zerotal/redislock ratios.
package redislock
