// Package pgtest starts real PostgreSQL and PgBouncer processes for tests:
// a database cluster made by initdb in a temporary directory, served on a
// free loopback port, killed and restarted on the same port and data to
// simulate a crash. Run as root (as CI does), the processes run as the
// unprivileged user postgres, since postgres refuses to run as root.
//
// The binaries come from the Debian packages postgresql and pgbouncer:
// they are looked up in PATH, then in /usr/lib/postgresql/*/bin (and
// /usr/sbin for pgbouncer).
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/zerotal/lock/internal/loopback"
	"github.com/zerotal/lock/internal/testkit/poll"
	"github.com/zerotal/lock/internal/testkit/syncbuf"
)

// startTimeout bounds how long a server may take to accept connections.
const startTimeout = 60 * time.Second

// Binary returns the path of a PostgreSQL program (initdb, postgres), or
// an error that says how to install it.
func Binary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.Reverse(dirs) // the newest version first
	for _, d := range append(dirs, "/usr/sbin") {
		if p := filepath.Join(d, name); isFile(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found: install the Debian packages postgresql and pgbouncer", name)
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// proc is one server process this package started, in a process group of
// its own, so that a kill reaches its children (postgres's backends).
type proc struct {
	t    testing.TB
	name string
	dir  string
	port int

	mu   sync.Mutex
	cmd  *exec.Cmd
	exit chan struct{}
	log  *syncbuf.Buffer
}

// Server is one postgres process owned by a test.
type Server struct{ proc }

// Start makes a database cluster in a new directory (a copy of one
// initdb made once: template.go) and starts postgres on a free
// loopback port, with database "postgres", user "postgres" and trust
// authentication; the server is killed when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	dir := tempDir(t)
	data := filepath.Join(dir, "data")
	initdb, err := Binary("initdb")
	if err != nil {
		t.Fatal(err)
	}
	if err := initData(initdb, data); err != nil {
		t.Fatal(err)
	}
	s := &Server{proc{t: t, name: "postgres", dir: data}}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		if s.port, err = loopback.FreePort(); err != nil {
			t.Fatalf("find a free port: %v", err)
		}
		if lastErr = s.Restart(); lastErr == nil {
			t.Cleanup(s.cleanup)
			return s
		}
	}
	t.Fatalf("start postgres: %v", lastErr)
	return nil
}

// URL is a postgres:// URL of the server's database "postgres".
func (s *Server) URL() string {
	return "postgres://postgres@127.0.0.1:" + strconv.Itoa(s.port) + "/postgres?sslmode=disable"
}

// Port is the server's TCP port.
func (s *Server) Port() int { return s.port }

// Restart starts the server again on the same port and data, after Kill,
// and returns once it accepts connections.
func (s *Server) Restart() error {
	bin, err := Binary("postgres")
	if err != nil {
		return err
	}
	// fsync off: a test kills the process, never the machine, and the
	// page cache keeps every commit; synchronous_commit stays on, so a
	// commit is in the WAL before it is acknowledged.
	return s.start(command(bin, "-D", s.dir, "-p", strconv.Itoa(s.port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
		"-c", "fsync=off", "-c", "full_page_writes=off", "-c", "max_connections=300",
		"-c", "shared_buffers=32MB"), s.accepts)
}

// accepts reports whether the server accepts a session: it listens some
// time before it has recovered.
func (s *Server) accepts() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := pgconn.Connect(ctx, s.URL())
	if err == nil {
		_ = c.Close(ctx)
	}
	return err == nil
}

// listens reports whether addr accepts TCP connections.
func listens(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		_ = c.Close()
	}
	return err == nil
}

// start runs cmd and returns once ready says the process serves.
func (p *proc) start(cmd *exec.Cmd, ready func() bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log = &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = p.log, p.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	p.cmd, p.exit = cmd, make(chan struct{})
	exit := p.exit
	go func() { _ = cmd.Wait(); close(exit) }()
	addr := "127.0.0.1:" + strconv.Itoa(p.port)
	up := poll.Wait(startTimeout, func() bool {
		select {
		case <-exit:
			return true
		default:
		}
		return ready()
	})
	select {
	case <-exit:
		return fmt.Errorf("%s exited at start: %s", p.name, p.log.String())
	default:
	}
	if !up {
		p.killLocked()
		return fmt.Errorf("%s did not listen on %s in %v\n%s", p.name, addr, startTimeout, p.log.String())
	}
	return nil
}

// Kill sends SIGKILL to the process and its children and waits until
// every one has exited.
func (p *proc) Kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.killLocked()
}

func (p *proc) killLocked() {
	if p.cmd == nil {
		return
	}
	pid := p.cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	<-p.exit
	// The backends are in the same group; a new postmaster refuses to
	// start while one of them still holds the old shared memory.
	gone := poll.Wait(30*time.Second, func() bool {
		return errors.Is(syscall.Kill(-pid, 0), syscall.ESRCH)
	})
	if !gone {
		p.t.Errorf("%s: processes of group %d still alive after SIGKILL", p.name, pid)
	}
	p.cmd = nil
}

// PID is the process id of the running server, 0 when it is not running.
func (p *proc) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

func (p *proc) cleanup() {
	if p.t.Failed() {
		p.mu.Lock()
		if p.log != nil {
			p.t.Logf("%s log:\n%s", p.name, p.log.String())
		}
		p.mu.Unlock()
	}
	p.Kill()
}

// command runs a program in a process group of its own, as the user
// postgres when this process is root.
func command(bin string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if u := unprivileged(); u != nil {
		cmd.SysProcAttr.Credential = u
		cmd.Env = append(os.Environ(), "HOME=/tmp")
	}
	return cmd
}

// unprivileged is the user postgres's credentials when running as root.
func unprivileged() *syscall.Credential {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return &syscall.Credential{Uid: 65534, Gid: 65534} // nobody
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// tempDir makes a directory the servers' user may write, removed when the
// test ends (testing's TempDir is private to root).
func tempDir(t testing.TB) string {
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if c := unprivileged(); c != nil {
		if err := os.Chown(dir, int(c.Uid), int(c.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
