package cluster

import (
	"encoding/json"

	"github.com/zerotal/lock/api"
)

// maxListAnswer bounds the JSON of one GET /v1/locks answer. The limit
// counts keys, and a key of a semaphore or read/write lock at its holder
// cap, with full queue and the longest owners, encodes to about 18.5 MB:
// without a bound in bytes a list of a few such keys would be larger than
// the API stream carries in one answer (stream.MaxAnswer, 32 MiB) and than
// a node should build for one request. Half of it leaves room for the
// frame and for a key that alone is larger.
const maxListAnswer = 16 << 20

// fitList keeps the first locks whose JSON fits within budget bytes, and
// at least one, so that a list always makes progress; cut reports that
// some were left out (the answer is then marked truncated).
func fitList(locks []api.Lock, budget int) (kept []api.Lock, cut bool) {
	size := 0
	for i, l := range locks {
		b, err := json.Marshal(l)
		if err != nil {
			return locks[:i], true
		}
		size += len(b) + 1 // the comma
		if size > budget && i > 0 {
			return locks[:i], true
		}
	}
	return locks, false
}
