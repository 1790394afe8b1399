package background

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Close cancels what runs, waits for it, and runs nothing after.
func TestSet_CloseCancelsWaitsAndRefuses(t *testing.T) {
	var s Set
	started := make(chan struct{})
	ended := false
	s.Go(time.Hour, func(ctx context.Context) {
		close(started)
		<-ctx.Done()
		ended = true
	})
	<-started
	s.Close()
	if !ended {
		t.Fatal("Close returned before the work it cancelled had returned")
	}
	ran := false
	s.Go(time.Hour, func(context.Context) { ran = true })
	s.Close()
	if ran {
		t.Fatal("work started after Close")
	}
}

// Each run is bounded by its timeout.
func TestSet_TimeoutBoundsTheWork(t *testing.T) {
	var s Set
	defer s.Close()
	done := make(chan error, 1)
	s.Go(10*time.Millisecond, func(ctx context.Context) {
		<-ctx.Done()
		done <- ctx.Err()
	})
	if err := <-done; err != context.DeadlineExceeded {
		t.Fatalf("ctx ended with %v, want its deadline", err)
	}
}
