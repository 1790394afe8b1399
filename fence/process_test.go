//go:build unix

package fence_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"github.com/zerotal/lock"
	_ "github.com/zerotal/lock/drivers/postgres" // the "postgres" driver of lock.Open
	"github.com/zerotal/lock/drivers/postgres/pgtest"
	_ "github.com/zerotal/lock/drivers/sqlite" // the "sqlite" driver of lock.Open
	"github.com/zerotal/lock/fence"
	"github.com/zerotal/lock/internal/testkit/poll"
	"github.com/zerotal/lock/internal/testkit/proctest"
)

// The test binary doubles as the paused holder: started with childEnv
// set, TestMain runs runChild instead of the tests.
const (
	childEnv    = "ZEROTAL_FENCE_CHILD"
	childLock   = "ZEROTAL_FENCE_LOCK"   // "sqlite PATH" or "postgres URL": the lock's backend
	childKey    = "ZEROTAL_FENCE_KEY"    // the lock key, also the resource's name
	childTarget = "ZEROTAL_FENCE_TARGET" // "sqlite DSN", "postgres URL" or "http URL": the resource
)

// holderTTL is the paused holder's TTL: the newer holder waits this long
// once the holder is stopped. Its first refresh comes a third of it after
// the grant, long after the holder has stopped itself.
const holderTTL = 3 * time.Second

// runChild takes the key with refresh, prints "held FENCE" and stops
// itself with SIGSTOP at once, before its first refresh, so that it is
// not stopped inside a transaction of the lock's backend (whose locks
// would then stop everyone else). Continued, on the line "write" from
// stdin it writes "older" to the resource with its fence, without
// looking at whether it still holds the lock (as a holder that was
// paused between its check and its write), and prints "stale HIGHEST",
// "wrote" or "error TEXT". It exits when stdin closes.
func runChild(mode string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if mode != "holder" {
		fmt.Fprintf(os.Stderr, "unknown child %q\n", mode)
		return 1
	}
	kind, addr, _ := strings.Cut(os.Getenv(childLock), " ")
	cfg := lock.Config{Driver: kind}
	if kind == "sqlite" {
		cfg.SQLite.Path = addr
	} else {
		cfg.Postgres.URL = addr
	}
	m, err := lock.Open(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: open:", err)
		return 1
	}
	defer m.Close()
	in := bufio.NewScanner(os.Stdin)
	err = m.Try(ctx, os.Getenv(childKey), holderTTL, func(_ context.Context, l *lock.Lock) error {
		fmt.Printf("held %d\n", l.Fence())
		if err := syscall.Kill(os.Getpid(), syscall.SIGSTOP); err != nil {
			return err
		}
		if !in.Scan() || in.Text() != "write" {
			return errors.New("no write asked")
		}
		// Not the callback's context: this holder does not notice it lost the lock.
		var stale *fence.StaleError
		switch err := writeTarget(ctx, os.Getenv(childTarget), l, "older"); {
		case errors.As(err, &stale):
			fmt.Printf("stale %d\n", stale.Highest)
		case err != nil:
			fmt.Printf("error %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		default:
			fmt.Println("wrote")
		}
		for in.Scan() { // until the test closes stdin
		}
		return nil
	}, lock.WithRefresh())
	if err != nil && !errors.As(err, new(*lock.LostError)) {
		fmt.Fprintln(os.Stderr, "child: try:", err)
	}
	return 0
}

// writeTarget writes body to the resource target names as l's holder:
// the document of id 1 in a database, guarded by a fence.DB, or a PUT to
// an HTTP service through fence.Transport.
func writeTarget(ctx context.Context, target string, l fence.Holder, body string) error {
	kind, addr, _ := strings.Cut(target, " ")
	if kind == "http" {
		client := &http.Client{Transport: &fence.Transport{Lock: l}, Timeout: 30 * time.Second}
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, addr, strings.NewReader(body))
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		if err := fence.CheckResponse(resp); err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("PUT: %s", resp.Status)
		}
		return nil
	}
	db, d, update := openResource(kind, addr)
	defer db.Close()
	g, err := fence.NewDB(db, fence.DBConfig{Dialect: d})
	if err != nil {
		return err
	}
	return g.Write(ctx, l.Key(), l.Fence(), func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, update, body)
		return err
	})
}

// openResource opens the resource database of a "sqlite" or "postgres"
// target, with the dialect and the statement that sets its document.
func openResource(kind, addr string) (db *sql.DB, d fence.Dialect, update string) {
	var err error
	if kind == "sqlite" {
		db, err = sql.Open("sqlite", addr)
		d, update = fence.SQLite, `UPDATE documents SET body = ? WHERE id = 1`
	} else {
		db, err = sql.Open("pgx", addr)
		d, update = fence.PostgreSQL, `UPDATE documents SET body = $1 WHERE id = 1`
	}
	if err != nil {
		panic(err) // sql.Open fails only for an unknown driver name
	}
	return db, d, update
}

// pausedHolder is the scenario of every resource: a child process takes
// key through lockSpec's backend, with refresh, and is SIGSTOPped past
// its TTL; this process takes the key (a higher fence) and writes "newer"
// to the resource; the child is SIGCONTed and writes "older" with its
// fence.
// The child's write must be refused, and read must still find "newer".
func pausedHolder(t *testing.T, lockSpec string, cfg lock.Config, target string, read func() string) {
	t.Helper()
	key := "fence-test/" + t.Name()
	child := startHolder(t, lockSpec, key, target)
	line := child.line(t)
	var older uint64
	if _, err := fmt.Sscanf(line, "held %d", &older); err != nil {
		t.Fatalf("the holder said %q", line)
	}
	child.waitStopped(t, true)

	m, err := lock.Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	var newer uint64
	err = m.Block(t.Context(), key, 30*time.Second, func(ctx context.Context, l *lock.Lock) error {
		newer = l.Fence()
		return writeTarget(ctx, target, l, "newer")
	}, lock.WithTimeout(60*time.Second))
	if err != nil {
		t.Fatalf("the newer holder: %v", err)
	}
	if newer <= older {
		t.Fatalf("newer holder's fence %d is not above the paused holder's %d", newer, older)
	}

	if err := child.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	child.waitStopped(t, false)
	child.send(t, "write")
	if got, want := child.line(t), "stale "+strconv.FormatUint(newer, 10); got != want {
		t.Errorf("the paused holder (fence %d) writing after the newer one (fence %d): %q, want %q", older, newer, got, want)
	}
	if got := read(); got != "newer" {
		t.Errorf("the resource holds %q after both wrote, want the newer holder's write", got)
	}
}

// TestPausedHolder_SQLite: locks on the sqlite driver, the resource a
// SQLite file both processes write.
func TestPausedHolder_SQLite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	locks := filepath.Join(dir, "locks.db")
	dsn := "file:" + filepath.Join(dir, "app.db") + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
	db := resourceDB(t, "sqlite", dsn)
	pausedHolder(t, "sqlite "+locks, lock.Config{Driver: "sqlite", SQLite: lock.SQLiteConfig{Path: locks}},
		"sqlite "+dsn, func() string { return document(t, db) })
}

// TestPausedHolder_PostgreSQL: locks on the postgres driver, the resource
// a table of the same database.
func TestPausedHolder_PostgreSQL(t *testing.T) {
	t.Parallel()
	url := pgtest.Start(t).URL()
	db := resourceDB(t, "postgres", url)
	pausedHolder(t, "postgres "+url, lock.Config{Driver: "postgres", Postgres: lock.PostgresConfig{URL: url}},
		"postgres "+url, func() string { return document(t, db) })
}

// TestPausedHolder_HTTP: locks on the sqlite driver, the resource a
// service behind fence.Handler, written with PUT through fence.Transport.
func TestPausedHolder_HTTP(t *testing.T) {
	t.Parallel()
	locks := filepath.Join(t.TempDir(), "locks.db")
	var mu sync.Mutex
	doc := "first"
	srv := httptest.NewServer(fence.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		doc = string(b)
		mu.Unlock()
	}), nil))
	t.Cleanup(srv.Close)
	pausedHolder(t, "sqlite "+locks, lock.Config{Driver: "sqlite", SQLite: lock.SQLiteConfig{Path: locks}},
		"http "+srv.URL+"/doc", func() string { mu.Lock(); defer mu.Unlock(); return doc })
}

// resourceDB opens the resource database, creates its table of fences and
// its document (id 1, "first"), and closes it when the test ends.
func resourceDB(t *testing.T, kind, addr string) *sql.DB {
	t.Helper()
	db, d, _ := openResource(kind, addr)
	t.Cleanup(func() { _ = db.Close() })
	g, err := fence.NewDB(db, fence.DBConfig{Dialect: d})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.CreateTable(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE documents (id INTEGER PRIMARY KEY, body TEXT NOT NULL)`,
		`INSERT INTO documents (id, body) VALUES (1, 'first')`,
	} {
		if _, err := db.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return db
}

func document(t *testing.T, db *sql.DB) string {
	t.Helper()
	var body string
	if err := db.QueryRowContext(t.Context(), `SELECT body FROM documents WHERE id = 1`).Scan(&body); err != nil {
		t.Fatal(err)
	}
	return body
}

// holder is a child process running runChild: its stdin, and its stdout's
// lines.
type holder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
}

func startHolder(t *testing.T, lockSpec, key, target string) *holder {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=holder", childLock+"="+lockSpec, childKey+"="+key, childTarget+"="+target)
	cmd.Stderr = os.Stderr
	stdin, stdout := proctest.Start(t, cmd)
	h := &holder{cmd: cmd, stdin: stdin, lines: make(chan string, 16)}
	go func() { // ends when the child's stdout closes
		defer close(h.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill() // this test's own child, stopped or not
		_ = cmd.Wait()
	})
	return h
}

// line is the child's next line of output.
func (h *holder) line(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-h.lines:
		if !ok {
			t.Fatal("the holder exited without a word")
		}
		return l
	case <-time.After(60 * time.Second):
		t.Fatal("the holder said nothing for 60s")
	}
	return ""
}

func (h *holder) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(h.stdin, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// waitStopped waits until the child is stopped by a signal (want true),
// or runs again (false), as /proc tells.
func (h *holder) waitStopped(t *testing.T, want bool) {
	t.Helper()
	what := map[bool]string{true: "the holder stopped", false: "the holder continued"}[want]
	poll.Until(t, 30*time.Second, what, func() bool { return stopped(h.cmd.Process.Pid) == want })
}

// stopped reports whether pid is stopped by a signal (state T in
// /proc/PID/stat).
func stopped(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] == "T"
}
