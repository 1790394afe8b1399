package api

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// PathWatch is the long poll of a key: GET /v1/watch?key=K&seen=S&wait_ms=N
// answers as GET /v1/lock does (200 and the Lock, or 404 when the key is
// free) as soon as the key's holders are no longer those S names
// (HoldersSeen of what the caller saw last; empty: free), or after N
// milliseconds (default and most: MaxWatchWait) with the key as it is. A
// caller that observes a key (an election) is so told of a grant, a
// release, an expiry or a hand-off within a round trip, rather than at its
// next look. The node answers from its own applied table, leader or not.
const PathWatch = "/v1/watch"

// WatchQuery is a watch's query (PathWatch), as schema/v1.json describes
// it to clients in other languages: each field a query parameter.
type WatchQuery struct {
	Key        string `json:"key"`
	Seen       string `json:"seen,omitempty"`
	WaitMillis int64  `json:"wait_ms,omitempty"`
}

// Values is q as the query of GET PathWatch: the one place a client names
// its parameters.
func (q WatchQuery) Values() url.Values {
	v := url.Values{"key": {q.Key}, "seen": {q.Seen}}
	if q.WaitMillis != 0 {
		v.Set("wait_ms", strconv.FormatInt(q.WaitMillis, 10))
	}
	return v
}

// MaxWatchWait is the longest wait_ms of a watch, and its default.
const MaxWatchWait = 30 * time.Second

// HoldersSeen names the holders of l (held false: none) by their fences,
// ascending and comma separated: what a watch's seen is compared with, the
// same for a client that read the key and for the node.
func HoldersSeen(l Lock, held bool) string {
	if !held {
		return ""
	}
	fences := []uint64{l.Fence}
	if len(l.Holders) > 0 {
		fences = fences[:0]
		for _, h := range l.Holders {
			fences = append(fences, h.Fence)
		}
		slices.Sort(fences)
	}
	parts := make([]string, len(fences))
	for i, f := range fences {
		parts[i] = strconv.FormatUint(f, 10)
	}
	return strings.Join(parts, ",")
}
