package drivers

import "time"

// Limits every backend accepts. The Manager checks them before any backend
// call; servers check them again at their boundary.
const (
	// MaxKeyLen is the longest key, in bytes, after the prefix is applied.
	MaxKeyLen = 1024
	// MaxOwnerLen is the longest owner token, in bytes. The replicated log
	// format accepts no longer one.
	MaxOwnerLen = 1024
	// MinTTL is the shortest TTL a backend is asked for (Redis counts in
	// milliseconds).
	MinTTL = time.Millisecond
	// MaxTTL is the longest TTL: beyond a week a lock is a configuration
	// mistake rather than a crash guard.
	MaxTTL = 7 * 24 * time.Hour
	// MaxHolders is the most grants one semaphore or read/write lock has
	// at once, on every backend: a semaphore's limit above it is refused
	// (ErrInvalid, Claim.CheckShared), and a reader beyond it meets a busy
	// key, as at a full semaphore (refused as contention, or it waits its
	// turn). It bounds what one key costs its backend, and the answer that
	// lists its holders: at the longest owners, its 1,000 holders and
	// 1,000 waiters fit the API stream's answer limit (32 MiB) with room.
	MaxHolders = 1000
)

// Limits of cluster membership: a member's id and address go into the
// replicated member map.
const (
	// MaxMemberIDLen is the longest node id, in bytes.
	MaxMemberIDLen = 128
	// MaxMemberAddrLen is the longest advertised address, in bytes.
	MaxMemberAddrLen = 256
)

// Unlimited, given as a count limit (keys, waiters per key, waiting
// requests, connections), lifts it. Every count limit in this module
// follows one convention: 0 means the package's default, which its
// documentation names, and Unlimited means no limit at all.
const Unlimited = -1
