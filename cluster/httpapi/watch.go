package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/access"
	"github.com/zerotal/lock/drivers"
)

// Watcher is the Store's optional long poll of a key (api.PathWatch): a
// Store without it answers the watch 501.
type Watcher interface {
	// Watch answers when key's holders are no longer those seen names,
	// when wait passes or when ctx ends, with the key as it is then;
	// held is false when it is free.
	Watch(ctx context.Context, key, seen string, wait time.Duration) (l api.Lock, held bool, err error)
}

func (h *handler) watch(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r, "key", "seen", "wait_ms")
	if err != nil {
		writeError(w, err)
		return
	}
	key := q.Get("key")
	if err := checkKey(key); err != nil {
		writeError(w, err)
		return
	}
	wait := api.MaxWatchWait
	if s := q.Get("wait_ms"); s != "" {
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil || ms < 0 || ms > api.MaxWatchWait.Milliseconds() {
			writeError(w, invalidf("wait_ms", "%q is not an integer in [0, %d]", s, api.MaxWatchWait.Milliseconds()))
			return
		}
		wait = time.Duration(ms) * time.Millisecond
	}
	if !h.scope(w, r, access.RightLock, key) {
		return
	}
	watcher, ok := h.store.(Watcher)
	if !ok {
		writeError(w, fmt.Errorf("watch: this node cannot watch keys: %w", drivers.ErrUnsupported))
		return
	}
	// A watch holds a goroutine and a connection for its wait as a
	// waiting acquire does: it takes a slot of the same cap.
	done, ok := h.waitSlot(w, r, wait.Milliseconds())
	if !ok {
		return
	}
	defer done()
	l, held, err := watcher.Watch(r.Context(), key, q.Get("seen"), wait)
	answerLock(w, r, l, held, err)
}
