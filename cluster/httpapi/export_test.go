package httpapi

import "time"

// SetStreamWorkerIdle sets how long an idle stream worker stays, and
// returns the old value.
func SetStreamWorkerIdle(d time.Duration) time.Duration {
	return time.Duration(streamWorkerIdle.Swap(int64(d)))
}

// StreamWorkers is how many stream workers are alive in this process.
func StreamWorkers() int64 { return streamWorkers.Load() }
