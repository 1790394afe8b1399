package sqlite

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
)

func acquireOp(d *Driver, key string, fence *uint64) *writeOp {
	return &writeOp{ctx: context.Background(), result: make(chan error, 1), fn: func(ctx context.Context) error {
		now := time.Now()
		var f int64
		if err := d.w.acquire.QueryRowContext(ctx, append([]any{key, "owner", deadlineUS(now, time.Minute), now.UnixMicro()}, append(claimArgs(drivers.Claim{}), nil)...)...).Scan(&f); err != nil {
			return err
		}
		*fence = uint64(f)
		return nil
	}}
}

func TestRunOnce_OneFailingCallDoesNotFailTheOthers(t *testing.T) {
	d := openInternal(t, Config{})
	var f1, f2 uint64
	broken := &writeOp{ctx: context.Background(), result: make(chan error, 1), fn: func(ctx context.Context) error {
		_, err := d.wconn.ExecContext(ctx, `INSERT INTO no_such_table VALUES (1)`)
		return err
	}}
	ops := []*writeOp{acquireOp(d, "k1", &f1), broken, acquireOp(d, "k2", &f2)}

	d.wsem <- struct{}{} // act as the call that got the connection
	if err := d.runOnce(ops); err != nil {
		t.Fatalf("runOnce = %v", err)
	}
	<-d.wsem
	for i, w := range ops {
		err := <-w.result
		if (err != nil) != (w == broken) {
			t.Fatalf("call %d: err = %v", i, err)
		}
	}
	// The joint run was rolled back and the good calls ran alone, once each.
	if f1 != 1 || f2 != 2 {
		t.Fatalf("fences = %d, %d; want 1, 2 (the rolled-back run must not consume fences)", f1, f2)
	}
	for _, key := range []string{"k1", "k2"} {
		if held, err := d.Exists(t.Context(), key); err != nil || !held {
			t.Fatalf("Exists(%s) = %v, %v", key, held, err)
		}
	}
}

func TestRunOnce_JointRunCommitsEveryCall(t *testing.T) {
	d := openInternal(t, Config{})
	fences := make([]uint64, 5)
	var ops []*writeOp
	for i := range fences {
		ops = append(ops, acquireOp(d, string(rune('a'+i)), &fences[i]))
	}
	d.wsem <- struct{}{}
	if err := d.runOnce(ops); err != nil {
		t.Fatal(err)
	}
	<-d.wsem
	for i, w := range ops {
		if err := <-w.result; err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if fences[i] != uint64(i+1) {
			t.Fatalf("fences = %v, want 1..5 in arrival order", fences)
		}
	}
}

func TestRunPending_CallWhoseContextEndedNeverRuns(t *testing.T) {
	d := openInternal(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	w := &writeOp{ctx: ctx, result: make(chan error, 1), fn: func(context.Context) error { ran = true; return nil }}
	d.pending = append(d.pending, w)
	d.wsem <- struct{}{}
	d.runPending()
	<-d.wsem
	if err := <-w.result; !errors.Is(err, context.Canceled) || ran {
		t.Fatalf("result = %v, ran = %v; want context.Canceled without running", err, ran)
	}
}

func TestWrite_ConcurrentCallsAllSucceed(t *testing.T) {
	d := openInternal(t, Config{})
	const n = 64
	type res struct {
		fence uint64
		err   error
	}
	out := make(chan res, n)
	for i := range n {
		go func() {
			f, ok, err := driverstest.Take(context.Background(), d, "key-"+string(rune('A'+i)), "o", time.Minute)
			if err == nil && !ok {
				err = errors.New("not acquired")
			}
			out <- res{f, err}
		}()
	}
	seen := map[uint64]bool{}
	for range n {
		r := <-out
		if r.err != nil {
			t.Fatal(r.err)
		}
		if seen[r.fence] {
			t.Fatalf("fence %d granted twice", r.fence)
		}
		seen[r.fence] = true
	}
	if !seen[1] || !seen[n] {
		t.Fatalf("fences are not 1..%d: %v", n, seen)
	}
}
