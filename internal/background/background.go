// Package background runs the work a driver does by itself after its
// caller has gone: the owner-guarded release of a grant that a wait given
// up may have left behind. The caller returns by its deadline; the driver's
// Close cancels what is still running and waits for it, so that nothing
// outlives the driver.
package background

import (
	"context"
	"sync"
	"time"
)

// Set is the work under way. The zero value is ready to use; it must not
// be copied.
type Set struct {
	mu     sync.Mutex // orders Go against Close
	closed bool
	wg     sync.WaitGroup
	ctx    context.Context
	cancel context.CancelFunc
}

// Go runs fn in its own goroutine, on a context that ends after timeout or
// at Close. After Close it runs nothing.
func (s *Set) Go(timeout time.Duration, fn func(ctx context.Context)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if s.ctx == nil {
		s.ctx, s.cancel = context.WithCancel(context.Background())
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.ctx, timeout)
		defer cancel()
		fn(ctx)
	}()
}

// Close cancels the work under way, waits for it to return, and refuses
// any more. It is idempotent.
func (s *Set) Close() {
	s.mu.Lock()
	s.closed = true
	cancel := s.cancel
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	s.wg.Wait()
}
