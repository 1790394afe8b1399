//go:build unix

package main

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers/redis/redistest"
)

// silentNode accepts connections and never answers: "no answer in time".
func silentNode(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// One exit status per kind of failure, for every command that talks to a
// backend, and on every backend where the failure exists (docs/CLI.md,
// "Exit status"): a refused credential is 77 whether the cluster refused
// a token or Redis a password; settings that do not fit the backend
// (another cluster's ID, TLS on one side only, an address that does not
// resolve) are 78; no answer in time, and nothing listening, are 69.
func TestCLI_ExitStatusPerKindOfFailure(t *testing.T) {
	const token = "the-right-token-0123456789"
	addr := startAgent(t, token)
	redis := redistest.Start(t, "--requirepass", "the-redis-password")
	silent := silentNode(t)

	type target struct {
		env  map[string]string
		args []string // after the command's name: the backend's flags
	}
	cluster := func(endpoints string, extra ...string) target {
		return target{env: map[string]string{"LOCKCLUSTER_ENDPOINTS": endpoints, "LOCKCLUSTER_TOKEN": token}, args: extra}
	}
	kinds := []struct {
		name    string
		want    int
		targets []target
	}{
		{"refused credential", exitNoPerm, []target{
			{env: map[string]string{"LOCKCLUSTER_ENDPOINTS": addr, "LOCKCLUSTER_TOKEN": "a-wrong-token-0123456789"}},
			{env: map[string]string{"REDIS_URL": "redis://:wrong@" + redis.Addr() + "/0"}, args: []string{"--driver", "redis"}},
			{env: map[string]string{"REDIS_URL": redis.URL()}, args: []string{"--driver", "redis"}}, // no password at all
		}},
		{"another cluster", exitConfig, []target{cluster(addr, "--cluster-id", "not-this-one")}},
		{"TLS on one side only", exitConfig, []target{cluster("https://" + addr)}},
		{"address that does not resolve", exitConfig, []target{cluster("nosuchhost.invalid:7001")}},
		{"nothing listening", exitUnavailable, []target{cluster("127.0.0.1:1")}},
		{"no answer in time", exitUnavailable, []target{cluster(silent)}},
	}
	commands := []struct {
		name    string
		args    []string
		drivers bool // takes --driver (run, bench); the others are the cluster's
	}{
		{"status", nil, false},
		{"locks", nil, false},
		{"join", []string{"--id", "n9", "--raft-addr", "127.0.0.1:1", "--http-addr", "127.0.0.1:2"}, false},
		{"leave", []string{"--id", "n9"}, false},
		{"run", []string{"--key", "k", "--", "true"}, true},
		{"bench", []string{"--duration", "1s", "--warmup", "0s", "--workers", "1"}, true},
	}
	for _, k := range kinds {
		for _, tg := range k.targets {
			for _, c := range commands {
				args := tg.args
				isRedis := len(args) > 0 && args[0] == "--driver"
				if isRedis && !c.drivers {
					continue // the cluster's own commands
				}
				if c.drivers && !isRedis {
					args = append([]string{"--driver", "cluster"}, args...)
				}
				if !c.drivers {
					args = append(args, "--timeout", "1s") // run and bench: the client's own budget
				}
				argv := append(append([]string{c.name}, args...), c.args...)
				start := time.Now()
				code, _, stderr := runCLI(t, tg.env, argv...)
				if took := time.Since(start); took > 2*time.Second {
					t.Logf("%s: lockcluster %s took %v", k.name, strings.Join(argv, " "), took.Round(time.Millisecond))
				}
				if code != k.want {
					t.Errorf("%s: lockcluster %s: exit %d, want %d; stderr %q", k.name, strings.Join(argv, " "), code, k.want, stderr)
				}
			}
		}
	}
}
