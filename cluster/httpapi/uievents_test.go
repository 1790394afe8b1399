package httpapi_test

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/zerotal/lock/cluster/httpapi"
)

// openUIEvents opens GET /ui/events as an operator on a node over s; the
// stream and the node end with the test.
func openUIEvents(t *testing.T, s httpapi.Store) *http.Response {
	t.Helper()
	srv := httptest.NewServer(newHandler(s, httpapi.Options{NodeID: "n1", Credentials: operator(tokOperator)}))
	t.Cleanup(srv.Close)
	req, _ := http.NewRequestWithContext(t.Context(), "GET", srv.URL+"/ui/events", nil)
	req.Header.Set("Authorization", basic(tokOperator))
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// A table that changes without pause sends a page at most one event per
// httpapi.UIEventsGap, each of which makes the page read the whole
// table from the leader again: many changes in a burst are one event.
// Before, each change was an event as fast as the stream could write
// them, and each open page re-read the table without pause.
func TestUI_EventsOfABurstAreSpaced(t *testing.T) {
	s := &tableStore{fakeStore: newFakeStore("n1")}
	resp := openUIEvents(t, s)
	events := make(chan time.Time, 1<<16)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if sc.Text() == "data: changed" {
				events <- time.Now()
			}
		}
	}()
	// Changes for a second (at most 5,000,000 of them).
	start := time.Now()
	for i := 0; i < 5_000_000 && time.Since(start) < time.Second; i++ {
		s.changed()
		runtime.Gosched()
	}
	end := time.Now()
	n := 0
	last := time.NewTimer(end.Sub(start) + 2*httpapi.UIEventsGap) // the event a change just before the end may still send
	defer last.Stop()
	for counting := true; counting; {
		select {
		case at, ok := <-events:
			if !ok {
				t.Fatal("the event stream ended")
			}
			if !at.After(end.Add(httpapi.UIEventsGap)) {
				n++
			}
		case <-last.C:
			counting = false
		}
	}
	if most := int(end.Sub(start)/httpapi.UIEventsGap) + 2; n > most {
		t.Fatalf("%d events in %v of changes, want at most %d (one per %v)", n, end.Sub(start).Round(time.Millisecond), most, httpapi.UIEventsGap)
	}
}
