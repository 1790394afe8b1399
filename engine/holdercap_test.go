package engine

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// A read/write lock lets in at most the holder cap of readers: the next
// meets a busy key, as at a full semaphore — refused as contention (told
// of the holder whose grant ends first), or queued until a reader leaves.
func TestShared_ReadersBeyondTheHolderCapMeetABusyKey(t *testing.T) {
	e, _ := newLive(t, Config{})
	ctx := t.Context()
	read := Claim{Kind: RWLock}
	var first Grant
	for i := range drivers.MaxHolders {
		g, ok, err := e.acquireClaim(ctx, "k", fmt.Sprint("r", i), time.Minute, read)
		if err != nil || !ok {
			t.Fatalf("reader %d: %v %v", i, ok, err)
		}
		if i == 0 {
			first = g
		}
	}
	g, ok, err := e.acquireClaim(ctx, "k", "late", time.Minute, read)
	if err != nil || ok {
		t.Fatalf("reader %d = %v %v, want refused as contention (the key is full)", drivers.MaxHolders+1, ok, err)
	}
	if g != first {
		t.Fatalf("refused reader told of %+v, want the holder whose grant ends first, %+v", g, first)
	}
	out := make(chan waitResult, 1)
	go func() {
		g, err := e.acquireClaimWait(ctx, "k", "late", time.Minute, read)
		out <- waitResult{grant: g, err: err}
	}()
	poll.Until(t, 10*time.Second, "the late reader to queue", func() bool {
		info, _, _ := e.Get(ctx, "k")
		return info.Waiters == 1
	})
	if ok, err := e.Release(ctx, "k", "r7"); !ok || err != nil {
		t.Fatalf("Release r7: %v %v", ok, err)
	}
	select {
	case r := <-out:
		if r.err != nil || r.grant.Owner != "late" {
			t.Fatalf("the waiting reader got %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting reader was not let in when a reader left")
	}
	info, _, _ := e.Get(ctx, "k")
	if n := len(info.Shared.Holders); n != drivers.MaxHolders {
		t.Fatalf("%d holders, want the cap, %d", n, drivers.MaxHolders)
	}
}

func TestShared_SemaphoreAboveTheHolderCapIsInvalid(t *testing.T) {
	e, _ := newLive(t, Config{})
	ctx := t.Context()
	_, ok, err := e.acquireClaim(ctx, "s", "o", time.Minute, Claim{Kind: Semaphore, Limit: drivers.MaxHolders + 1})
	if ok || !errors.Is(err, drivers.ErrInvalid) {
		t.Fatalf("a semaphore of %d = %v %v, want ErrInvalid", drivers.MaxHolders+1, ok, err)
	}
	if _, ok, err := e.acquireClaim(ctx, "s", "o", time.Minute, Claim{Kind: Semaphore, Limit: drivers.MaxHolders}); !ok || err != nil {
		t.Fatalf("a semaphore of the cap = %v %v, want granted", ok, err)
	}
}

// A key's holders and a shared name's waiters count towards MaxKeys, so
// one key cannot hold more than the table may.
func TestShared_KeyLimitCountsHoldersAndWaiters(t *testing.T) {
	e, _ := newLive(t, Config{MaxKeys: 10})
	ctx := t.Context()
	read := Claim{Kind: RWLock}
	for i := range 10 {
		if _, ok, err := e.acquireClaim(ctx, "k", fmt.Sprint("r", i), time.Minute, read); err != nil || !ok {
			t.Fatalf("reader %d: %v %v", i, ok, err)
		}
	}
	if _, ok, err := e.acquireClaim(ctx, "k", "r10", time.Minute, read); ok || !errors.Is(err, drivers.ErrFull) {
		t.Fatalf("reader 11 with MaxKeys 10 = %v %v, want ErrFull", ok, err)
	}
	if _, ok, err := e.acquireOne(ctx, "other", "o", time.Minute); ok || !errors.Is(err, drivers.ErrFull) {
		t.Fatalf("a new key with MaxKeys 10 taken by readers = %v %v, want ErrFull", ok, err)
	}
}
