// Package redistest starts real redis-server processes for tests: one
// process per Server, on a free loopback port, in a temporary directory,
// without persistence. Tests can kill and restart a server on the same
// port to simulate an outage, and can start a small Redis Cluster.
//
// The redis-server binary comes from the Debian package redis-server; it
// is looked up in PATH and then in /usr/bin.
package redistest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/zerotal/lock/internal/loopback"
)

// startTimeout bounds how long a server may take to answer PING.
const startTimeout = 15 * time.Second

// Server is one redis-server process owned by a test.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	args []string

	mu   sync.Mutex
	proc *exec.Cmd
	exit chan struct{} // closed when proc has exited
}

// Binary returns the path of redis-server, or an error that says how to
// install it.
func Binary() (string, error) {
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/bin/redis-server"); err == nil {
		return "/usr/bin/redis-server", nil
	}
	return "", errors.New("redis-server not found: install the Debian package redis-server")
}

// Start starts a redis-server with extra command-line arguments (for
// example "--requirepass", "secret") and stops it when the test ends.
func Start(t testing.TB, extraArgs ...string) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// A free port can be taken by another process between the probe and
	// the server's bind; try a few.
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := loopback.FreePort()
		if err != nil {
			t.Fatalf("find a free port: %v", err)
		}
		s := &Server{t: t, bin: bin, dir: dir, port: port, args: extraArgs}
		if lastErr = s.start(); lastErr == nil {
			t.Cleanup(func() {
				if t.Failed() {
					s.dumpLog()
				}
				s.Kill()
			})
			return s
		}
	}
	t.Fatalf("start redis-server: %v", lastErr)
	return nil
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Port is the server's TCP port.
func (s *Server) Port() int { return s.port }

// URL is a redis:// URL for the server, database 0, no credentials.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Client returns a client for the server that is closed when the test ends.
func (s *Server) Client() *goredis.Client {
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr(), Password: s.password()})
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

// PID is the process id of the running server, 0 when it is not running.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return 0
	}
	return s.proc.Process.Pid
}

// Kill stops the server at once with SIGKILL, as a crash would, and waits
// for the process to exit. Killing a stopped server does nothing.
func (s *Server) Kill() {
	s.mu.Lock()
	proc, exit := s.proc, s.exit
	s.proc = nil
	s.mu.Unlock()
	if proc == nil {
		return
	}
	_ = proc.Process.Kill()
	<-exit
}

// Restart starts a killed server again on the same port, with the same
// arguments and an empty data set.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	// The port was just freed by our own process; Redis binds with
	// SO_REUSEADDR, but give a busy machine a few tries.
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if err = s.start(); err == nil {
			return
		}
	}
	s.t.Fatalf("restart redis-server on port %d: %v", s.port, err)
}

func (s *Server) start() error {
	args := []string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--dir", s.dir,
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--logfile", s.logPath(),
	}
	args = append(args, s.args...)
	proc := exec.Command(s.bin, args...)
	if err := proc.Start(); err != nil {
		return err
	}
	exit := make(chan struct{})
	go func() {
		_ = proc.Wait()
		close(exit)
	}()
	if err := s.waitReady(exit); err != nil {
		_ = proc.Process.Kill()
		<-exit
		return err
	}
	s.mu.Lock()
	s.proc, s.exit = proc, exit
	s.mu.Unlock()
	return nil
}

// waitReady polls the port with PING until the server answers, exits or
// the deadline passes.
func (s *Server) waitReady(exit <-chan struct{}) error {
	c := goredis.NewClient(&goredis.Options{
		Addr: s.Addr(), Password: s.password(),
		DialTimeout: time.Second, MaxRetries: -1,
	})
	defer c.Close()
	deadline := time.Now().Add(startTimeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer on %s within %v: %w", s.Addr(), startTimeout, err)
		}
		select {
		case <-exit:
			return fmt.Errorf("redis-server exited at start: %s", s.logTail())
		case <-tick.C:
		}
	}
}

// password is the value of a --requirepass argument, if any.
func (s *Server) password() string {
	for i := 0; i+1 < len(s.args); i++ {
		if s.args[i] == "--requirepass" {
			return s.args[i+1]
		}
	}
	return ""
}

func (s *Server) logPath() string {
	return filepath.Join(s.dir, "redis-"+strconv.Itoa(s.port)+".log")
}

func (s *Server) logTail() string {
	b, _ := os.ReadFile(s.logPath())
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(bytes.TrimSpace(b))
}

func (s *Server) dumpLog() {
	s.t.Logf("redis-server %s log:\n%s", s.Addr(), s.logTail())
}
