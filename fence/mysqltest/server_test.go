package mysqltest

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // database/sql driver "mysql"

	"github.com/zerotal/lock/internal/loopback"
	"github.com/zerotal/lock/internal/testkit/poll"
	"github.com/zerotal/lock/internal/testkit/syncbuf"
)

// binary is a MariaDB program, on PATH or where Debian puts it.
func binary(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if p := filepath.Join("/usr/sbin", name); fileExists(p) {
		return p
	}
	t.Fatalf("%s not found: install the Debian package mariadb-server (scripts/test-deps.sh mariadbd:mariadb-server)", name)
	return ""
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// startServer initialises a data directory in the test's temporary
// directory, starts mariadbd on a free loopback port with no grant checks,
// and returns a database "app" on it, closed and the server killed when
// the test ends.
func startServer(t *testing.T) *sql.DB {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	var user []string
	if os.Geteuid() == 0 {
		user = []string{"--user=root"} // mariadbd refuses root unless told
	}
	install := exec.Command(binary(t, "mariadb-install-db"), append([]string{"--no-defaults", "--datadir=" + data,
		"--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve"}, user...)...)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	for attempt := 0; ; attempt++ {
		port, err := loopback.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		log := &syncbuf.Buffer{}
		cmd := exec.Command(binary(t, "mariadbd"), append([]string{"--no-defaults", "--datadir=" + data,
			"--port=" + strconv.Itoa(port), "--bind-address=127.0.0.1", "--socket=" + filepath.Join(dir, "sock"),
			"--skip-grant-tables", "--skip-name-resolve", "--skip-log-bin",
			"--innodb-buffer-pool-size=16M", "--innodb-flush-log-at-trx-commit=2"}, user...)...)
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		stop := func() {
			_ = cmd.Process.Kill() // this test's own server
			<-exited
		}
		db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/?timeout=2s", port))
		if err != nil {
			stop()
			t.Fatal(err)
		}
		up := poll.Wait(60*time.Second, func() bool {
			select {
			case <-exited:
				return true
			default:
			}
			return db.PingContext(t.Context()) == nil
		})
		_ = db.Close()
		select {
		case <-exited:
			if attempt < 4 { // the free port was taken meanwhile
				continue
			}
			t.Fatalf("mariadbd exited at start:\n%s", log.String())
		default:
		}
		if !up {
			stop()
			t.Fatalf("mariadbd did not answer in 60s:\n%s", log.String())
		}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("mariadbd log:\n%s", log.String())
			}
			stop()
		})
		return openApp(t, port)
	}
}

// openApp creates the database "app" and opens it.
func openApp(t *testing.T, port int) *sql.DB {
	t.Helper()
	root, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/", port))
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if _, err := root.ExecContext(t.Context(), "CREATE DATABASE app"); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/app", port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}
