package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/fsm"
)

// handleJoin adds a voter. It is idempotent: the same id and address
// change nothing; a known id with a new address, or a known address under
// another id, is removed first.
func (n *Node) handleJoin(w http.ResponseWriter, r *http.Request, _ *leadership) {
	var req api.JoinRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := checkJoin(&req); err != nil {
		writeError(w, err)
		return
	}
	var err error
	switch {
	case req.ID == "":
		err = invalidf("id", "missing")
	case checkHostPort(req.Addr) != nil:
		err = invalidf("addr", "%v", checkHostPort(req.Addr))
	case req.HTTP != "" && checkHostPort(req.HTTP) != nil:
		err = invalidf("http", "%v", checkHostPort(req.HTTP))
	}
	if err != nil {
		writeError(w, err)
		return
	}
	if err := n.addVoter(raft.ServerID(req.ID), raft.ServerAddress(req.Addr)); err != nil {
		writeError(w, err)
		return
	}
	if req.HTTP != "" {
		if cur, ok := n.fsm.Member(req.ID); !ok || cur != req.HTTP {
			if _, err := n.apply(fsm.Entry{Member: fsm.SetMember, ID: req.ID, HTTPAddr: req.HTTP}); err != nil {
				writeError(w, applyErr("join", err))
				return
			}
		}
	}
	n.log.Info("node joined", "id", req.ID, "addr", req.Addr, "http", req.HTTP)
	writeJSON(w, http.StatusOK, struct{}{})
}

func (n *Node) addVoter(id raft.ServerID, addr raft.ServerAddress) error {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return unavailable("join", err)
	}
	for _, s := range f.Configuration().Servers {
		if s.ID == id && s.Address == addr {
			return nil
		}
		if s.ID == id || s.Address == addr {
			if err := n.raft.RemoveServer(s.ID, 0, 0).Error(); err != nil {
				return applyErr("join: remove stale entry", err)
			}
		}
	}
	if err := n.raft.AddVoter(id, addr, 0, 0).Error(); err != nil {
		return applyErr("join", err)
	}
	return nil
}

// handleLeave removes a server. An id that is not in the raft
// configuration is answered 404 (not_found), so that a typo is not taken
// for a removal; a member entry left behind by an earlier leave that
// stopped half-way is still cleaned up, and answered 200.
func (n *Node) handleLeave(w http.ResponseWriter, r *http.Request, _ *leadership) {
	var req api.LeaveRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := checkMemberID(req.ID); err != nil {
		writeError(w, err)
		return
	}
	if req.ID == "" {
		writeError(w, invalidf("id", "missing"))
		return
	}
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		writeError(w, unavailable("leave", err))
		return
	}
	var ids []string
	voter := false
	for _, s := range f.Configuration().Servers {
		ids = append(ids, string(s.ID))
		voter = voter || string(s.ID) == req.ID
	}
	_, member := n.fsm.Member(req.ID)
	if !voter && !member {
		writeError(w, fmt.Errorf("%w %q: the members are %s", errUnknownMember, req.ID, strings.Join(ids, ", ")))
		return
	}
	if voter {
		if err := n.raft.RemoveServer(raft.ServerID(req.ID), 0, 0).Error(); err != nil {
			writeError(w, applyErr("leave", err))
			return
		}
	}
	if member && req.ID != n.cfg.ID {
		if _, err := n.apply(fsm.Entry{Member: fsm.RemoveMember, ID: req.ID}); err != nil {
			writeError(w, applyErr("leave", err))
			return
		}
	}
	n.log.Info("node left", "id", req.ID)
	writeJSON(w, http.StatusOK, struct{}{})
}

// joinCluster asks the member at Config.Join to add this node, retrying
// transient failures until ctx ends. The request names this node's
// cluster ID: a member of another cluster refuses it (403), and so does
// one with another token (401); neither is retried.
func (n *Node) joinCluster(ctx context.Context) error {
	target := n.cfg.Join
	if !strings.Contains(target, "://") {
		target = n.httpScheme() + "://" + target
	}
	target = strings.TrimSuffix(target, "/") + api.PathJoin
	body, err := json.Marshal(api.JoinRequest{ID: n.cfg.ID, Addr: n.RaftAddr(), HTTP: n.AdvertisedHTTPAddr()})
	if err != nil {
		return fmt.Errorf("cluster: join: %w", err)
	}
	client := &http.Client{Transport: n.proxy, Timeout: 10 * time.Second}
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := n.joinOnce(ctx, client, target, body)
		if err == nil {
			return nil
		}
		var perm *permanentError
		if errors.As(err, &perm) {
			return fmt.Errorf("cluster: join via %s: %w", n.cfg.Join, err)
		}
		n.log.Warn("join attempt failed", "attempt", attempt, "error", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: join via %s: %w (last error: %v)", n.cfg.Join, ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// permanentError is a join answer that retrying cannot fix (4xx).
type permanentError struct{ msg string }

func (e *permanentError) Error() string { return e.msg }

func (n *Node) joinOnce(ctx context.Context, client *http.Client, target string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return &permanentError{msg: err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(api.HeaderClusterID, n.cfg.ClusterID)
	if n.cfg.Token != "" {
		req.Header.Set(api.HeaderAuthorization, api.Bearer(n.cfg.Token))
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	msg := string(bytes.TrimSpace(raw))
	var eb api.ErrorBody
	if json.Unmarshal(raw, &eb) == nil && eb.Message != "" {
		msg = eb.Message
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		return nil
	case resp.StatusCode == http.StatusForbidden && eb.Code == api.CodeWrongCluster:
		return &permanentError{msg: fmt.Sprintf("refused: this node is configured for cluster %q, which the member does not belong to (%s)", n.cfg.ClusterID, msg)}
	case resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests:
		return &permanentError{msg: fmt.Sprintf("status %d: %s", resp.StatusCode, msg)}
	}
	return fmt.Errorf("status %d: %s", resp.StatusCode, msg)
}
