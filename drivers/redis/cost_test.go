package redis_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers/redis"
	"github.com/zerotal/lock/drivers/redis/redistest"
)

// commandCalls is how many times Redis ran cmd (its commandstats), scripts'
// calls included.
func commandCalls(t *testing.T, srv *redistest.Server, cmd string) int {
	t.Helper()
	info, err := srv.Client().Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls="); ok {
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest+",", ',')])
			return n
		}
	}
	return 0
}

// TestContendedCycle_NoFreeKeyCheck: a key this process waits for is
// contended, so its enqueues and hand-overs skip the check for a free key
// nobody waits for (EXISTS), a call that could only fail: a second waiter
// queueing and two releases handing the key to the waiters of the same
// process run no EXISTS.
func TestContendedCycle_NoFreeKeyCheck(t *testing.T) {
	srv := redistest.Start(t)
	d := open(t, srv)
	key := newKey("contended")
	mustAcquire(t, d, key, "holder", time.Minute)
	first := startWait(t, t.Context(), d, key, "w1", time.Minute)
	if err := srv.Client().ConfigResetStat(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	second := startWait(t, t.Context(), d, key, "w2", time.Minute)
	for _, step := range []struct {
		owner string
		next  <-chan waitResult
	}{{"holder", first}, {"w1", second}} {
		if ok, err := d.Release(t.Context(), key, step.owner); !ok || err != nil {
			t.Fatalf("Release(%s) = %v, %v", step.owner, ok, err)
		}
		if r := receive(t, step.next, 10*time.Second); r.err != nil {
			t.Fatalf("the waiter after %s: %v", step.owner, r.err)
		}
	}
	if n := commandCalls(t, srv, "exists"); n != 0 {
		t.Errorf("a queued waiter and two hand-overs in one process ran EXISTS %d times; want 0", n)
	}
	if ok, err := d.Release(t.Context(), key, "w2"); !ok || err != nil {
		t.Fatalf("Release(w2) = %v, %v", ok, err)
	}
}

// TestOpen_RESP2UnlessTheURLSays: a driver opened from a URL speaks RESP2
// on its connections (on RESP3 go-redis reads the socket for push messages
// before every command), unless the URL's protocol option asks otherwise.
func TestOpen_RESP2UnlessTheURLSays(t *testing.T) {
	srv := redistest.Start(t)
	for _, c := range []struct{ query, want string }{{"", "resp=2"}, {"?protocol=3", "resp=3"}} {
		d, err := redis.Open(t.Context(), redis.Config{URL: srv.URL() + c.query})
		if err != nil {
			t.Fatal(err)
		}
		mustAcquire(t, d, newKey("resp"), "probe", time.Minute)
		clients, err := srv.Client().ClientList(t.Context()).Result()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, line := range splitLines(clients) {
			// The driver's connection ran the acquire: EVALSHA, or EVAL
			// where the server did not know the script yet.
			if containsField(line, "cmd=evalsha") || containsField(line, "cmd=eval") {
				found = true
				if !containsField(line, c.want) {
					t.Errorf("URL%s: the driver's connection is %q; want %s", c.query, line, c.want)
				}
			}
		}
		if !found {
			t.Errorf("URL%s: no connection ran the acquire:\n%s", c.query, clients)
		}
		_ = d.Close()
	}
}

// TestUncontendedCycle_OneQueueCheck: an acquire and a release of a free
// key that nobody waits for look for a queue once, in the acquire (EXISTS
// of the grants and the queue); the release sees the owner's grant as the
// hash's only field, which says that nobody is queued.
func TestUncontendedCycle_OneQueueCheck(t *testing.T) {
	srv := redistest.Start(t)
	d := open(t, srv)
	key := newKey("free")
	const cycles = 10
	if err := srv.Client().ConfigResetStat(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	for range cycles {
		mustAcquire(t, d, key, "o", time.Minute)
		if ok, err := d.Release(t.Context(), key, "o"); !ok || err != nil {
			t.Fatalf("Release = %v, %v", ok, err)
		}
	}
	if n := commandCalls(t, srv, "exists"); n != cycles {
		t.Errorf("%d uncontended cycles ran EXISTS %d times; want %d (the acquires')", cycles, n, cycles)
	}
}
