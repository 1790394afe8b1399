// Package redislock compares the zerotal lock Redis driver with
// github.com/bsm/redislock, side by side in one run on the same
// redis-server. It is a separate module so that the peer library never
// becomes a dependency of the main module.
//
//	cd bench/redislock && go test -run '^$' -bench . -benchtime 10s -count 3
//
// Both libraries are used through their public APIs: redislock's Obtain
// and Release, and zerotal's Manager (Make, then Acquire or Block, and
// Release). Two setups open them: "defaults", each as its README does with
// default settings (a go-redis client from the URL for redislock,
// lock.Open with the URL for zerotal), and "equalpool", each on a go-redis
// client with the same options and one pooled connection per worker,
// handed to redislock.New and to zerotal's redis.New.
//
// One cycle is one successful acquire followed by one release. "spread" is
// 32 workers, each on its own key; "hot" is 8 workers contending for one
// key, each waiting until it gets it (redislock polls every millisecond,
// zerotal is woken by pub/sub). Every sub-benchmark reports cycles/s, the
// acquire latency p50 and p99, the CPU time of one cycle (benchmark
// process and redis-server together) and, for "hot", the hand-off latency
// from the start of a release to the next holder's grant; and the
// zerotal/redislock ratios of throughput and p99.
package redislock
