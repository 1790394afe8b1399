package httpapi

import (
	"net/http"
	"strconv"
	"time"
)

// uiEventsFor is how long one GET /ui/events stays open; the browser's
// EventSource opens the next one by itself (after uiEventsRetry), and the
// page re-reads the table when it does, so that no change falls between.
const (
	uiEventsFor   = 55 * time.Second
	uiEventsRetry = 300 * time.Millisecond
	// uiEventsGap is the least time between two events of one stream:
	// each makes the page read the whole table from the leader again, so
	// a table that changes without pause is read at most this often by
	// each open page, and still shown within a second.
	uiEventsGap = 250 * time.Millisecond
	// uiEventsFull is how long a page whose stream found the node's wait
	// cap full waits before it asks again (Retry-After, and the page's
	// script).
	uiEventsFull = 10 * time.Second
)

// uiEvents sends a server-sent event at every change of the lock table
// as this node applies it (TableWatcher): the page's script then re-reads
// the table. Changes that come while an event is written are one event.
func (h *handler) uiEvents(w http.ResponseWriter, r *http.Request) {
	tw, ok := h.store.(TableWatcher)
	if !ok {
		h.uiFail(w, r, http.StatusNotImplemented, "This node has no live updates: reload the page.")
		return
	}
	// An open page's stream is a wait: it takes a slot of the node's
	// cap. When none is free the page is told to come back later; it
	// reloads its table meanwhile on its own timer.
	var done func()
	if h.waits != nil {
		var err error
		if done, err = h.waits.take(); err != nil {
			w.Header().Set("Retry-After", strconv.Itoa(int(uiEventsFull.Seconds())))
			h.uiFail(w, r, http.StatusTooManyRequests, "This node serves as many waits and live pages as it may: the page reloads its table by itself and asks for live updates again later.")
			return
		}
		defer done()
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	rc := http.NewResponseController(w)
	send := func(s string) bool {
		// Every write has the write timeout from its start, not the
		// stream's first byte.
		_ = rc.SetWriteDeadline(time.Now().Add(h.opts.WriteTimeout))
		if _, err := w.Write([]byte(s)); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	// Watched before the first byte: the page re-reads the table once the
	// stream is open, and a change after that is told.
	changed, stop := tw.TableChanged()
	defer func() { stop() }()
	if !send("retry: " + strconv.FormatInt(uiEventsRetry.Milliseconds(), 10) + "\n\n") {
		return
	}
	end := time.NewTimer(uiEventsFor)
	defer end.Stop()
	beat := time.NewTicker(15 * time.Second)
	defer beat.Stop()
	// due is the end of the gap after the last event while a change waits
	// for it (nil: none waits): the changes until then are that one event,
	// so the table is not watched meanwhile.
	var due <-chan time.Time
	var told time.Time
	for {
		var msg string
		select {
		case <-changed:
			stop()
			if wait := time.Until(told.Add(uiEventsGap)); wait > 0 {
				changed, stop, due = nil, func() {}, time.After(wait)
				continue
			}
			// The next change is watched for before this one is told:
			// one that comes meanwhile is not missed.
			changed, stop = tw.TableChanged()
			msg, told = "data: changed\n\n", time.Now()
		case <-due:
			changed, stop = tw.TableChanged()
			due, msg, told = nil, "data: changed\n\n", time.Now()
		case <-beat.C:
			msg = ": still here\n\n"
		case <-end.C:
			return
		case <-r.Context().Done():
			return
		}
		if !send(msg) {
			return
		}
	}
}
