package httpapi

import (
	"net/http"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/internal/hostport"
)

// join adds a voter (see Store.Join). Every field is checked here, so
// that the Store gets an id and addresses it can record.
func (h *handler) join(w http.ResponseWriter, r *http.Request) {
	var req api.JoinRequest
	raw, err := decodeBody(w, r, &req)
	if err == nil {
		err = checkJoin(&req)
	}
	if err == nil {
		switch {
		case req.ID == "":
			err = invalidf("id", "missing")
		case hostport.Check(req.Addr) != nil:
			err = invalidf("addr", "%v", hostport.Check(req.Addr))
		case req.HTTP == "":
			err = invalidf("http", "missing: the leader asks the node at its HTTP address before it adds it")
		case hostport.Check(req.HTTP) != nil:
			err = invalidf("http", "%v", hostport.Check(req.HTTP))
		}
	}
	if err != nil {
		writeError(w, err)
		return
	}
	h.onLeader(w, r, raw, func() {
		if err := h.store.Join(r.Context(), req.ID, req.Addr, req.HTTP); err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, struct{}{})
	})
}

// leave removes a server (see Store.Leave). An id that is no member is
// answered 404 (not_found), so that a typo is not taken for a removal.
func (h *handler) leave(w http.ResponseWriter, r *http.Request) {
	var req api.LeaveRequest
	raw, err := decodeBody(w, r, &req)
	if err == nil {
		err = checkMemberID(req.ID)
	}
	if err == nil && req.ID == "" {
		err = invalidf("id", "missing")
	}
	if err != nil {
		writeError(w, err)
		return
	}
	h.onLeader(w, r, raw, func() {
		if err := h.store.Leave(r.Context(), req.ID); err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, struct{}{})
	})
}

// node answers what this node says of itself (api.NodeInfo), never
// forwarded.
func (h *handler) node(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, h.store.Node(r.Context()))
}
