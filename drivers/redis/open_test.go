package redis_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/drivers/redis"
	"github.com/zerotal/lock/drivers/redis/redistest"
	"github.com/zerotal/lock/internal/loopback"
)

const secret = "hunter2-very-secret"

func TestOpen_BadURLsNeverShowThePassword(t *testing.T) {
	for _, raw := range []string{
		"http://user:" + secret + "@127.0.0.1:6379/0",                       // wrong scheme
		"redis://user:" + secret + "@127.0.0.1:6379/notanumber",             // database is not a number
		"redis://user:" + secret + "@127.0.0.1:6379/0/1",                    // path too long
		"redis://user:" + secret + "@127.0.0.1:6379/0?bogus=1",              // unknown option
		"redis://user:" + secret + "@127.0.0.1:6379/0?dial_timeout=x",       // bad option value
		"redis://user:" + secret[:6] + "#" + secret[6:] + "@127.0.0.1:6379", // unescaped '#'
		"redis://user:" + secret + "@[::1",                                  // unparsable host
		"redis://user:" + secret + "@/0",                                    // no host
		"unix://user:" + secret + "@/tmp/redis.sock",                        // not a network URL
	} {
		t.Run("", func(t *testing.T) {
			d, err := redis.Open(t.Context(), redis.Config{URL: raw})
			if err == nil {
				_ = d.Close()
				t.Fatalf("Open accepted a bad URL")
			}
			if !errors.Is(err, drivers.ErrInvalid) {
				t.Fatalf("Open: %v, want ErrInvalid", err)
			}
			for _, text := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
				if strings.Contains(text, secret[:7]) {
					t.Fatalf("error shows the password: %s", text)
				}
			}
			t.Log(err)
		})
	}
}

func TestOpen_UnreachableIsUnavailable(t *testing.T) {
	port, err := loopback.FreePort() // nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	raw := "redis://user:" + secret + "@127.0.0.1:" + strconv.Itoa(port) + "/0"
	start := time.Now()
	_, err = redis.Open(t.Context(), redis.Config{URL: raw})
	if !errors.Is(err, drivers.ErrUnavailable) {
		t.Fatalf("Open of a closed port: %v, want ErrUnavailable", err)
	}
	if strings.Contains(err.Error(), secret[:7]) {
		t.Fatalf("error shows the password: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Open took %v to find nothing listening", took)
	}
}

func TestOpen_PasswordAndDatabase(t *testing.T) {
	srv := redistest.Start(t, "--requirepass", secret)
	good := "redis://:" + secret + "@" + srv.Addr() + "/3"
	d, err := redis.Open(t.Context(), redis.Config{URL: good})
	if err != nil {
		t.Fatalf("Open with the right password: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	key := newKey("db")
	mustAcquire(t, d, key, token(), time.Hour)

	lockKey, _, _ := redis.KeyNames(key)
	for db, want := range map[int]int64{0: 0, 3: 1} {
		c := goredis.NewClient(&goredis.Options{Addr: srv.Addr(), Password: secret, DB: db})
		n, err := c.Exists(t.Context(), lockKey).Result()
		_ = c.Close()
		if err != nil || n != want {
			t.Fatalf("lock key in database %d: exists=%d err=%v, want %d", db, n, err, want)
		}
	}

	wrong := "redis://:not-the-" + secret + "@" + srv.Addr() + "/0"
	_, err = redis.Open(t.Context(), redis.Config{URL: wrong})
	if err == nil {
		t.Fatal("Open with a wrong password succeeded")
	}
	if errors.Is(err, drivers.ErrUnavailable) {
		t.Fatalf("a wrong password is a configuration mistake, not an outage: %v", err)
	}
	if strings.Contains(err.Error(), secret[:7]) {
		t.Fatalf("error shows the password: %v", err)
	}
	t.Log(err)
}

func TestOpen_ConfigNeedsExactlyOneBackend(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client()
	for name, cfg := range map[string]redis.Config{
		"neither":           {},
		"both":              {URL: srv.URL(), Client: client},
		"negative interval": {URL: srv.URL(), PollInterval: -time.Second},
	} {
		if _, err := redis.Open(t.Context(), cfg); !errors.Is(err, drivers.ErrInvalid) {
			t.Errorf("%s: Open = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := redis.New(nil); !errors.Is(err, drivers.ErrInvalid) {
		t.Errorf("New(nil) = %v, want ErrInvalid", err)
	}
}

// TestNew_LeavesTheApplicationsClientOpen: the driver never closes a client
// it did not open.
func TestNew_LeavesTheApplicationsClientOpen(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client()
	d, err := redis.New(client, redis.WithPollInterval(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	key, owner := newKey("own-client"), token()
	mustAcquire(t, d, key, owner, time.Hour)
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := client.Ping(t.Context()).Err(); err != nil {
		t.Fatalf("application's client after the driver's Close: %v", err)
	}
	if _, _, err := driverstest.Take(t.Context(), d, key, owner, time.Hour); !errors.Is(err, drivers.ErrClosed) {
		t.Fatalf("Acquire after Close: %v, want ErrClosed", err)
	}
}
