package lock

import (
	"context"
	"sync"
)

// cleanupSet counts the releases the Manager sends in the background
// (Lock.cleanUp), so that Shutdown can wait for them. Unlike a WaitGroup,
// it may grow while someone waits: a callback that returns during Shutdown
// may start one.
type cleanupSet struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0; nil when nobody waits
}

func (s *cleanupSet) add() {
	s.mu.Lock()
	s.n++
	s.mu.Unlock()
}

func (s *cleanupSet) done() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n--; s.n == 0 && s.idle != nil {
		close(s.idle)
		s.idle = nil
	}
}

// wait returns once no release is under way, or with ctx's error.
func (s *cleanupSet) wait(ctx context.Context) error {
	for {
		s.mu.Lock()
		if s.n == 0 {
			s.mu.Unlock()
			return nil
		}
		if s.idle == nil {
			s.idle = make(chan struct{})
		}
		idle := s.idle
		s.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
