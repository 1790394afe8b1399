package pgtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/zerotal/lock/internal/loopback"
)

// Bouncer is one pgbouncer process in transaction mode in front of a
// Server: every transaction may run on another server connection, as
// behind the poolers teams run in production.
type Bouncer struct{ proc }

// StartBouncer starts pgbouncer in transaction mode in front of srv on a
// free loopback port; it is killed when the test ends.
func StartBouncer(t testing.TB, srv *Server) *Bouncer {
	t.Helper()
	bin, err := Binary("pgbouncer")
	if err != nil {
		t.Fatal(err)
	}
	dir := tempDir(t)
	users := filepath.Join(dir, "users.txt")
	if err := os.WriteFile(users, []byte(`"postgres" ""`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := &Bouncer{proc{t: t, name: "pgbouncer", dir: dir}}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		if b.port, err = loopback.FreePort(); err != nil {
			t.Fatalf("find a free port: %v", err)
		}
		ini := filepath.Join(dir, "pgbouncer.ini")
		conf := fmt.Sprintf(`[databases]
postgres = host=127.0.0.1 port=%d dbname=postgres user=postgres

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
max_client_conn = 1000
default_pool_size = 20
ignore_startup_parameters = extra_float_digits
`, srv.Port(), b.port, users)
		if err := os.WriteFile(ini, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		if lastErr = b.start(command(bin, ini), func() bool { return listens("127.0.0.1:" + strconv.Itoa(b.port)) }); lastErr == nil {
			t.Cleanup(b.cleanup)
			return b
		}
	}
	t.Fatalf("start pgbouncer: %v", lastErr)
	return nil
}

// URL is a postgres:// URL of the database "postgres" through the pooler.
func (b *Bouncer) URL() string {
	return "postgres://postgres@127.0.0.1:" + strconv.Itoa(b.port) + "/postgres?sslmode=disable"
}
