package background

import (
	"context"
	"errors"
	"testing"
)

// After waits for the work recorded on its keys before it, and for no
// other key's; ctx and stop cut it short, naming the key.
func TestKeys_AfterWaitsForTheKeysWork(t *testing.T) {
	var l Keys
	if k, err := l.After(t.Context(), nil, "a"); k != "" || err != nil {
		t.Fatalf("After with nothing recorded = %q, %v", k, err)
	}
	doneA := l.Add("a")
	doneA2 := l.Add("a")
	doneB := l.Add("b")
	if k, err := l.After(t.Context(), nil, "c"); k != "" || err != nil {
		t.Fatalf("After of a key with no work = %q, %v", k, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if k, err := l.After(ctx, nil, "c", "a"); k != "a" || !errors.Is(err, context.Canceled) {
		t.Fatalf("After of a busy key, ctx ended = %q, %v; want a, Canceled", k, err)
	}
	stop := make(chan struct{})
	close(stop)
	if k, err := l.After(t.Context(), stop, "b"); k != "b" || !errors.Is(err, ErrStopped) {
		t.Fatalf("After of a busy key, stopped = %q, %v; want b, ErrStopped", k, err)
	}
	returned := make(chan error, 1)
	go func() {
		_, err := l.After(t.Context(), nil, "a")
		returned <- err
	}()
	doneA()
	doneB()
	doneA2()
	if err := <-returned; err != nil {
		t.Fatalf("After once the work returned: %v", err)
	}
	if n := l.n.Load(); n != 0 || len(l.keys) != 0 {
		t.Fatalf("%d recorded, %d keys, after every work returned", n, len(l.keys))
	}
}
