package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// proc is a child process we started, stopped by its PID.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

// startProc starts name with args, its output appended to logPath.
func startProc(name, logPath string, bin string, args ...string) (*proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// stop sends SIGTERM, then SIGKILL after grace, to this process only.
func (p *proc) stop(grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// freeAddr returns a loopback address whose port is free at this instant.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// freeAddrPairs returns n pairs of free loopback addresses, one pair a
// member (its client and peer ports).
func freeAddrPairs(n int) ([][2]string, error) {
	pairs := make([][2]string, n)
	for i := range pairs {
		for j := range pairs[i] {
			a, err := freeAddr()
			if err != nil {
				return nil, err
			}
			pairs[i][j] = a
		}
	}
	return pairs, nil
}

// startMembers starts a process of bin for each member in ids, named
// kind and the id, logging to dir/<id>.log, with args(i) and then extra
// as its arguments. On an error it stops those it started.
func startMembers(kind, bin, dir string, ids []string, args func(i int) []string, extra []string) ([]*proc, error) {
	var procs []*proc
	for i, id := range ids {
		p, err := startProc(kind+" "+id, filepath.Join(dir, id+".log"), bin, append(args(i), extra...)...)
		if err != nil {
			stopAll(procs)
			return nil, err
		}
		procs = append(procs, p)
	}
	return procs, nil
}

// stopAll stops procs, each given 10 s to exit.
func stopAll(procs []*proc) {
	for _, p := range procs {
		p.stop(10 * time.Second)
	}
}

// waitReady calls ready, each call bounded by attempt, until it succeeds;
// it gives up when one of procs exits or after 30 s, saying what was not
// reached.
func waitReady(ctx context.Context, procs []*proc, attempt time.Duration, what string, ready func(context.Context) error) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		rctx, cancel := context.WithTimeout(ctx, attempt)
		err := ready(rctx)
		cancel()
		if err == nil {
			return nil
		}
		for _, p := range procs {
			if p.exited() {
				return fmt.Errorf("%s exited; see %s", p.name, p.log)
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s after 30s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
