package drivers

import "time"

// Limits every backend accepts. The Manager checks them before any backend
// call; servers check them again at their boundary.
const (
	// MaxKeyLen is the longest key, in bytes, after the prefix is applied.
	MaxKeyLen = 1024
	// MinTTL is the shortest TTL a backend is asked for (Redis counts in
	// milliseconds).
	MinTTL = time.Millisecond
	// MaxTTL is the longest TTL: beyond a week a lock is a configuration
	// mistake rather than a crash guard.
	MaxTTL = 7 * 24 * time.Hour
)
