package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zerotal/lock/client"
	"github.com/zerotal/lock/cluster/peer"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/internal/logbridge"
	"github.com/zerotal/lock/internal/testkit/syncbuf"
)

func secret(t *testing.T, name string) string {
	t.Helper()
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return name + "-" + hex.EncodeToString(b)
}

// The token, a wrong token and a password in a URL never reach a log line
// (at trace level, raft's included) or an error, whatever goes wrong:
// wrong tokens on requests and forwarded requests, a join with a wrong
// token, a client given credentials in its address, an unreachable node.
func TestSecrets_NeverInLogsOrErrors(t *testing.T) {
	token, wrongToken, password := secret(t, "token"), secret(t, "wrong"), secret(t, "password")
	logs := &syncbuf.Buffer{}
	logger := func(name string) *slog.Logger {
		return slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: logbridge.LevelTrace})).With("node", name)
	}
	nodes := startCluster(t, 2, func(c *Config) {
		c.Token = token
		c.Logger = logger(c.ID)
	})
	leader := waitLeader(t, nodes)
	follower := followers(nodes, leader)[0]
	ctx := t.Context()
	var errs []string
	note := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: no error", what)
		}
		errs = append(errs, what+": "+err.Error())
	}

	// A node that joins with a wrong token is refused.
	cfg := testConfig(t, "n3")
	cfg.Join, cfg.BootstrapSelf, cfg.Token, cfg.Logger = follower.HTTPAddr(), false, wrongToken, logger("n3")
	jctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	n3, err := NewNode(jctx, cfg)
	cancel()
	if err == nil {
		shutdown(t, n3)
	}
	note("join with a wrong token", err)

	clientLogs := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: logbridge.LevelTrace})).With("node", "client")
	for _, addr := range []string{leader.HTTPAddr(), follower.HTTPAddr()} {
		c, err := client.New(client.Config{Addrs: []string{addr}, Token: wrongToken, Logger: clientLogs, Timeout: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = driverstest.Take(ctx, c, "k", "o", time.Second)
		note("acquire with a wrong token via "+addr, err)
		_, err = c.Status(ctx)
		note("status with a wrong token", err)
		_ = c.Close()
	}
	_, err = client.New(client.Config{Addrs: []string{fmt.Sprintf("http://admin:%s@%s", password, leader.HTTPAddr())}})
	note("address with a password", err)
	_, err = client.New(client.Config{Addrs: []string{fmt.Sprintf("ftp://admin:%s@%s", password, leader.HTTPAddr())}})
	note("bad scheme with a password", err)
	down, err := client.New(client.Config{Addrs: []string{"127.0.0.1:1"}, Token: token, Logger: clientLogs, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = driverstest.Take(ctx, down, "k", "o", time.Second)
	note("unreachable node", err)
	_ = down.Close()

	// The right token works, so the wrong ones above were refused for the
	// right reason.
	ok, err := client.New(client.Config{Addrs: []string{follower.HTTPAddr()}, Token: token, Logger: clientLogs})
	if err != nil {
		t.Fatal(err)
	}
	defer ok.Close()
	if _, got, err := driverstest.Take(ctx, ok, "k", "o", time.Second); err != nil || !got {
		t.Fatalf("acquire with the token: %v %v", got, err)
	}

	// Raft connections with a wrong raft secret, at both ends of the
	// handshake, and a node whose raft secret is too short.
	raftSecret, wrongRaftSecret := secret(t, "raft"), secret(t, "wrongraft")
	for _, pair := range [][2]string{{raftSecret, wrongRaftSecret}, {wrongRaftSecret, raftSecret}} {
		// A refused connection never reaches Accept: the layer tells
		// OnRefuse (a node logs it).
		accepted := make(chan error, 4)
		a, err := peer.NewStreamLayer(peer.Config{Bind: "127.0.0.1:0", ClusterID: "c", Key: []byte(pair[0]),
			OnRefuse: func(err error) { accepted <- err }})
		if err != nil {
			t.Fatal(err)
		}
		d, err := peer.NewStreamLayer(peer.Config{Bind: "127.0.0.1:0", ClusterID: "c", Key: []byte(pair[1])})
		if err != nil {
			t.Fatal(err)
		}
		out, err := d.Dial(raft.ServerAddress(a.Addr().String()), 5*time.Second)
		if err == nil {
			_ = out.Close()
		}
		note("raft dial with another raft secret", err)
		note("raft accept with another raft secret", <-accepted)
		_ = a.Close()
		_ = d.Close()
	}
	short := testConfig(t, "n4")
	short.RaftSecret = raftSecret[:10]
	note("a raft secret that is too short", short.Validate())

	all := logs.String() + "\n" + strings.Join(errs, "\n")
	if !strings.Contains(logs.String(), "join attempt") && !strings.Contains(all, "401") {
		t.Fatalf("the refusals left no trace to search:\n%s", all)
	}
	for name, s := range map[string]string{"token": token, "wrong token": wrongToken, "password": password,
		"raft secret": raftSecret, "wrong raft secret": wrongRaftSecret, "short raft secret": raftSecret[:10]} {
		if strings.Contains(all, s) {
			t.Errorf("the %s appears in the logs or errors:\n%s", name, all)
		}
	}
	t.Logf("searched %d bytes of logs and %d errors, e.g. %s", len(logs.String()), len(errs), errs[0])
}
