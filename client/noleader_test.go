package client

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
)

// leaderless is a node up without a leader: its status names none and
// lists the configuration peers, and every other request is a 503.
func leaderless(t *testing.T, id string, peers func() []Peer) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == api.PathStatus {
			writeJSON(w, 200, Status{ID: id, State: "candidate", Term: 7, Peers: peers()})
			return
		}
		writeError(w, http.StatusServiceUnavailable, api.CodeUnavailable, "forward: no leader known (election in progress or no quorum)")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// refusedAddr is an address nothing listens on.
func refusedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// With two of three voters down and the third up without a leader, no
// leader can be elected until an operator brings one back: a call says so
// within two seconds, with ErrUnavailable naming the nodes, instead of
// retrying for its whole Timeout. With two voters up and no leader (an
// election), calls keep trying as before.
func TestClient_NoQuorumFailsFast(t *testing.T) {
	var peers []Peer
	addrs := []string{refusedAddr(t), refusedAddr(t), ""}
	up := leaderless(t, "n3", func() []Peer { return peers })
	addrs[2] = strings.TrimPrefix(up.URL, "http://")
	for i, a := range addrs {
		peers = append(peers, Peer{ID: "n" + string(rune('1'+i)), Addr: "raft-" + a, HTTPAddr: a, Suffrage: "voter"})
	}
	// The member map of the node that answers may lack an address (an
	// entry it has not applied yet): a silent endpoint counts for it.
	peers[0].HTTPAddr = ""
	c := newTestClient(t, Config{Addrs: addrs, Timeout: 10 * time.Second})
	want := strings.Join(slices.Sorted(slices.Values(addrs[:2])), ", ")
	for _, call := range []struct {
		name string
		do   func() error
	}{
		{"list", func() error { _, _, err := c.List(t.Context(), "", 10); return err }},
		{"acquire", func() error { _, _, err := driverstest.Take(t.Context(), c, "k", "o", time.Second); return err }},
		{"release", func() error { _, err := c.Release(t.Context(), "k", "o"); return err }},
	} {
		start := time.Now()
		err := call.do()
		took := time.Since(start)
		if !errors.Is(err, drivers.ErrUnavailable) || !strings.Contains(err.Error(), "2 of the 3 voters do not answer ("+want+")") {
			t.Errorf("%s without quorum: %v; want ErrUnavailable naming n1 and n2", call.name, err)
		}
		if took > 2*time.Second {
			t.Errorf("%s without quorum took %v, want 2s at most", call.name, took.Round(time.Millisecond))
		}
	}

	// n2 up too, without a leader yet: an election may end it, so a call
	// tries for its whole Timeout.
	up2 := leaderless(t, "n2", func() []Peer { return peers })
	addrs[1] = strings.TrimPrefix(up2.URL, "http://")
	peers[1].HTTPAddr = addrs[1]
	c2 := newTestClient(t, Config{Addrs: addrs, Timeout: 1500 * time.Millisecond})
	start := time.Now()
	_, _, err := c2.List(t.Context(), "", 10)
	if took := time.Since(start); !errors.Is(err, drivers.ErrUnavailable) || took < 1500*time.Millisecond {
		t.Errorf("with a majority up and no leader: %v after %v; want ErrUnavailable after the whole Timeout", err, took.Round(time.Millisecond))
	}
}
