package driverstest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/internal/testkit/proctest"
	"github.com/zerotal/lock/internal/testkit/syncbuf"
)

// A backend that processes share (SQLite, Redis) is driven by RunModel
// through child processes: the test binary runs again as ModelChild, which
// opens a handle and serves it on stdin and stdout, one JSON line a call,
// each call in a goroutine of its own so that a wait blocks nothing else.
// StartModelProcs starts them and gives each as a Proc whose Kill is
// SIGKILL.

// modelChildEnv names the test that a child process runs.
const modelChildEnv = "ZEROTAL_MODEL_CHILD"

// modelLine marks the protocol's lines, so that anything else a child
// prints is ignored.
const modelLine = "model "

type modelCall struct {
	ID    uint64          `json:"id"`
	Op    string          `json:"op"`
	Req   drivers.Request `json:"req,omitzero"`
	Key   string          `json:"key,omitempty"`
	Owner string          `json:"owner,omitempty"`
	TTL   time.Duration   `json:"ttl,omitempty"`
	Of    uint64          `json:"of,omitempty"` // "cancel": the call whose ctx ends
}

type modelReply struct {
	ID      uint64               `json:"id"`
	Grant   drivers.Grant        `json:"grant,omitzero"`
	OK      bool                 `json:"ok,omitempty"`
	Holding drivers.Holding      `json:"holding,omitzero"`
	Caps    drivers.Capabilities `json:"caps,omitzero"`
	Err     string               `json:"err,omitempty"`
	Is      []string             `json:"is,omitempty"`
}

// modelErrs are the errors a reply carries by name, so that errors.Is
// holds on the parent's side.
var modelErrs = map[string]error{
	"invalid": drivers.ErrInvalid, "not_acquired": drivers.ErrNotAcquired, "unavailable": drivers.ErrUnavailable,
	"closed": drivers.ErrClosed, "unsupported": drivers.ErrUnsupported, "full": drivers.ErrFull,
	"canceled": context.Canceled, "deadline": context.DeadlineExceeded,
}

type remoteError struct {
	msg string
	is  []string
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Is(target error) bool {
	for _, n := range e.is {
		if modelErrs[n] == target {
			return true
		}
	}
	return false
}

// ModelChild is the body of a backend's TestModelChild: in a process that
// StartModelProcs started it opens a handle with open, serves it until
// stdin closes, and exits (so no leak check runs on the calls it leaves);
// in any other it returns at once.
func ModelChild(open func(ctx context.Context) (Target, error)) {
	if os.Getenv(modelChildEnv) == "" {
		return
	}
	ctx := context.Background()
	d, err := open(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "model child: open:", err)
		os.Exit(2)
	}
	serveModel(d, os.Stdin, os.Stdout)
	os.Exit(0)
}

// serveModel answers the calls read from in on out until in closes.
func serveModel(d Target, in io.Reader, out io.Writer) {
	var mu sync.Mutex // out and cancels
	cancels := map[uint64]context.CancelFunc{}
	reply := func(r modelReply) {
		b, _ := json.Marshal(r)
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, "%s%s\n", modelLine, b)
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var c modelCall
		if err := json.Unmarshal([]byte(strings.TrimPrefix(sc.Text(), modelLine)), &c); err != nil {
			continue
		}
		if c.Op == "cancel" {
			mu.Lock()
			if cancel := cancels[c.Of]; cancel != nil {
				cancel()
			}
			mu.Unlock()
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		mu.Lock()
		cancels[c.ID] = cancel
		mu.Unlock()
		go func() {
			r := serveCall(ctx, d, c)
			mu.Lock()
			delete(cancels, c.ID)
			mu.Unlock()
			cancel()
			reply(r)
		}()
	}
	// stdin closed: the parent is done, and the process exits with the
	// calls still under way, as a killed one would.
}

func serveCall(ctx context.Context, d Target, c modelCall) modelReply {
	r := modelReply{ID: c.ID}
	var err error
	switch c.Op {
	case "acquire":
		r.Grant, err = d.Acquire(ctx, c.Req)
	case "release":
		r.OK, err = d.Release(ctx, c.Key, c.Owner)
	case "extend":
		r.OK, err = d.Extend(ctx, c.Key, c.Owner, c.TTL)
	case "force":
		err = d.ForceRelease(ctx, c.Key)
	case "inspect":
		r.Holding, r.OK, err = d.Inspect(ctx, c.Key)
	case "caps":
		r.Caps = d.Capabilities()
	default:
		err = fmt.Errorf("unknown call %q", c.Op)
	}
	if err != nil {
		r.Err = err.Error()
		for n, target := range modelErrs {
			if errors.Is(err, target) {
				r.Is = append(r.Is, n)
			}
		}
	}
	return r
}

// remote is a Target served by a child process.
type remote struct {
	mu      sync.Mutex // stdin, next, pending, gone
	stdin   io.WriteCloser
	next    uint64
	pending map[uint64]chan modelReply
	gone    bool
	caps    drivers.Capabilities
}

// StartModelProcs starts n processes of the test binary running test (the
// package's TestModelChild) with env added, and returns them as Procs.
// Each is killed, by its PID, when the test ends if it still runs.
func StartModelProcs(t testing.TB, n int, test string, env ...string) []Proc {
	t.Helper()
	procs := make([]Proc, n)
	for i := range procs {
		procs[i] = startModelProc(t, test, env)
	}
	return procs
}

func startModelProc(t testing.TB, test string, env []string) Proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(append(os.Environ(), modelChildEnv+"=1"), env...)
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	stdin, stdout := proctest.Start(t, cmd)
	r := &remote{stdin: stdin, pending: map[uint64]chan modelReply{}}
	reaped := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), modelLine)
			var rep modelReply
			if !ok || json.Unmarshal([]byte(line), &rep) != nil {
				continue
			}
			r.mu.Lock()
			ch := r.pending[rep.ID]
			delete(r.pending, rep.ID)
			r.mu.Unlock()
			if ch != nil {
				ch <- rep
			}
		}
		_ = cmd.Wait() // after every read from the pipe, as os/exec requires
		r.mu.Lock()
		r.gone = true
		for id, ch := range r.pending {
			ch <- modelReply{ID: id, Err: "the process is gone: " + stderr.String(), Is: []string{"unavailable"}}
			delete(r.pending, id)
		}
		r.mu.Unlock()
		close(reaped)
	}()
	kill := func() {
		select {
		case <-reaped:
		default:
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-reaped
		}
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-reaped:
		case <-time.After(10 * time.Second):
			kill()
		}
	})
	rep, err := r.call(context.Background(), modelCall{Op: "caps"})
	if err != nil {
		t.Fatalf("model child %d: %v", cmd.Process.Pid, err)
	}
	r.caps = rep.Caps
	return Proc{Driver: r, Kill: kill, Name: fmt.Sprintf("pid %d", cmd.Process.Pid)}
}

// call sends c and returns its reply; when ctx ends first the child is
// told to end the call's ctx, and its answer is still awaited, as a
// driver's own would be.
func (r *remote) call(ctx context.Context, c modelCall) (modelReply, error) {
	ch := make(chan modelReply, 1)
	r.mu.Lock()
	if r.gone {
		r.mu.Unlock()
		return modelReply{}, &remoteError{msg: "the process is gone", is: []string{"unavailable"}}
	}
	r.next++
	c.ID = r.next
	r.pending[c.ID] = ch
	err := r.send(c)
	r.mu.Unlock()
	if err != nil {
		return modelReply{}, &remoteError{msg: err.Error(), is: []string{"unavailable"}}
	}
	var rep modelReply
	select {
	case rep = <-ch:
	case <-ctx.Done():
		r.mu.Lock()
		_ = r.send(modelCall{Op: "cancel", Of: c.ID})
		r.mu.Unlock()
		rep = <-ch
	}
	if rep.Err != "" {
		return rep, &remoteError{msg: rep.Err, is: rep.Is}
	}
	return rep, nil
}

// send writes c; r.mu must be held.
func (r *remote) send(c modelCall) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(r.stdin, "%s%s\n", modelLine, b)
	return err
}

func (r *remote) Acquire(ctx context.Context, q drivers.Request) (drivers.Grant, error) {
	rep, err := r.call(ctx, modelCall{Op: "acquire", Req: q})
	return rep.Grant, err
}

func (r *remote) Release(ctx context.Context, key, owner string) (bool, error) {
	rep, err := r.call(ctx, modelCall{Op: "release", Key: key, Owner: owner})
	return rep.OK, err
}

func (r *remote) Extend(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	rep, err := r.call(ctx, modelCall{Op: "extend", Key: key, Owner: owner, TTL: ttl})
	return rep.OK, err
}

func (r *remote) ForceRelease(ctx context.Context, key string) error {
	_, err := r.call(ctx, modelCall{Op: "force", Key: key})
	return err
}

func (r *remote) Inspect(ctx context.Context, key string) (drivers.Holding, bool, error) {
	rep, err := r.call(ctx, modelCall{Op: "inspect", Key: key})
	return rep.Holding, rep.OK, err
}

func (r *remote) Capabilities() drivers.Capabilities { return r.caps }
