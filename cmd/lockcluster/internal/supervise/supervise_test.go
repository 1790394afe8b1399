//go:build unix

package supervise

import (
	"context"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/zerotal/lock/internal/testkit/proctest"
)

func needProc(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc to see whether a process still runs")
	}
}

// ignoreTerm is a grandchild that only SIGKILL stops: it ignores SIGTERM
// (as does the sleep it becomes), then writes its PID to $1.
const ignoreTerm = `trap '' TERM
echo $$ > "$1"
exec sleep 1000
`

// When refreshes cannot keep the lease alive, the group is stopped so
// that its last process is dead before the lease runs out at the backend:
// SIGTERM at grace+margin before the end, SIGKILL at margin before it.
func TestGroup_StopsBeforeTheLeaseEnds(t *testing.T) {
	needProc(t)
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "pid")
	inner := proctest.Script(t, dir, "inner.sh", ignoreTerm)
	cmd := exec.Command("sh", "-c", `trap '' TERM; sh "$0" "$1" & wait`, inner, pidfile)
	end := time.Now().Add(2 * time.Second) // a lease that is never extended
	g := &Group{Cmd: cmd, Grace: 500 * time.Millisecond, Margin: 400 * time.Millisecond,
		Lease: func() time.Time { return end }, Say: t.Logf}
	type result struct {
		err   error
		cause Cause
		at    time.Time
	}
	done := make(chan result, 1)
	go func() {
		_, cause, err := g.Supervise(context.Background())
		done <- result{err, cause, time.Now()}
	}()
	pid := proctest.ReadPID(t, pidfile)
	r := <-done
	if r.err != nil || r.cause != LeaseEnding {
		t.Fatalf("supervise = %v, cause %d; want cause LeaseEnding", r.err, r.cause)
	}
	if proctest.Alive(pid) {
		t.Fatalf("grandchild %d still runs", pid)
	}
	if !r.at.Before(end) {
		t.Fatalf("the group was gone only %v after the lease's end", r.at.Sub(end))
	}
	if earliest := end.Add(-400 * time.Millisecond); r.at.Before(earliest) {
		t.Fatalf("the group was killed %v before the margin, cutting its grace short", earliest.Sub(r.at))
	}
}
