package httpapi

import (
	"crypto/rand"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/cluster/access"
)

// The live lock page, GET /ui: the node renders the table of held keys
// itself (html/template, no build step, nothing loaded from elsewhere),
// so that it reads without JavaScript; a small inline script re-renders
// the table when GET /ui/events says the table changed. It is served by
// the leader, as GET /v1/locks is (a follower forwards it); the events
// come from the node the page was opened on, which applies every entry.
// Sign-in, rights and the force-release form are in uiauth.go and
// uiforce.go.

// Paths of the page.
const (
	PathUI         = "/ui"
	pathUIEvents   = "/ui/events"
	pathUIForce    = "/ui/force-release"
	uiListLimit    = DefaultListLimit
	uiFormMaxBytes = 8 << 10
)

//go:embed ui/page.html
var uiFiles embed.FS

var uiTemplates = template.Must(template.New("ui").Funcs(template.FuncMap{
	"eventsFullMillis": uiEventsFull.Milliseconds,
	"maxWaitEdges":     func() int { return api.MaxWaitEdges },
}).ParseFS(uiFiles, "ui/page.html"))

// ui adds the page's routes to mux.
func (h *handler) ui(mux *http.ServeMux) {
	mux.Handle("GET "+PathUI, h.uiAuthorize(http.HandlerFunc(h.uiPage)))
	mux.Handle("GET "+pathUIEvents, h.uiAuthorize(http.HandlerFunc(h.uiEvents)))
	mux.Handle("POST "+pathUIForce, h.uiAuthorize(http.HandlerFunc(h.uiForce)))
}

// uiView is what every template of the page is given.
type uiView struct {
	Title, Nonce      string
	Node              api.Status
	Via               string // the node a forwarded page was opened on
	Cred, Role, Scope string
	Prefix, Holder    string // the filter
	Token             string // the force-release form's (uiauth.go)
	CanForce          bool
	Released          string
	List              api.LockList
	Rows              []uiRow
	Waiting           int
	Read              string
	AgeUnknown        string // why an age is not shown
	Key, Victim, Back string // the confirmation
	Message           string // an error page's
	status            int
	template          string
}

// uiRow is one holder of a held key: a mutex's one, each of a shared
// key's. The first row of a key carries its waiters and its button.
type uiRow struct {
	Key, Claim, Holder, Owner string
	Fence                     uint64
	Age, Left                 string
	First, Force, InCycle     bool
	Waiters                   int
	Queue                     []uiWaiter
}

type uiWaiter struct{ Owner, Holder, Mode, Age string }

func (h *handler) uiPage(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r, "prefix", "holder", "part", "released")
	if err != nil {
		h.uiFail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	h.onLeader(w, r, nil, func() {
		c := caller(r)
		v := h.uiBase(r, "Locks")
		v.Prefix, v.Holder, v.Released = q.Get("prefix"), q.Get("holder"), q.Get("released")
		list, err := h.lockList(r, uiPrefixes(c, v.Prefix), v.Holder, uiListLimit)
		if err != nil {
			h.uiFail(w, r, http.StatusServiceUnavailable, err.Error())
			return
		}
		v.List, v.Read = list, time.Now().UTC().Format("15:04:05.000 UTC")
		v.AgeUnknown = uiAgeUnknown(v.Node.ID)
		v.CanForce = c.Can(access.RightForceRelease)
		if v.CanForce {
			v.Token = formToken(r, c)
		}
		cycle := map[string]bool{}
		for _, e := range list.Edges {
			if e.InCycle {
				cycle[e.Key] = true
			}
		}
		for _, l := range list.Locks {
			v.Waiting += l.Waiters
			v.Rows = append(v.Rows, uiRows(l, v.CanForce && c.CoversKey(l.Key), cycle[l.Key])...)
		}
		v.template = "page"
		if q.Get("part") == "table" {
			v.template = "table"
		}
		h.uiRender(w, v)
	})
}

// uiPrefixes is what to list for a filter prefix as c may see it: the
// prefix itself when c's prefixes cover it, else those of c's prefixes
// that lie under it (none: nothing to list).
func uiPrefixes(c *access.Credential, prefix string) []string {
	if c.CoversPrefix(prefix) {
		return []string{prefix}
	}
	var out []string
	for _, p := range c.Prefixes {
		if strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	return out
}

func uiRows(l api.Lock, force, inCycle bool) []uiRow {
	claim := "mutex"
	switch l.Kind {
	case api.KindSemaphore:
		claim = fmt.Sprintf("semaphore of %d", l.Limit)
	case api.KindRWLock:
		claim = "read/write"
	}
	holders := l.Holders
	if len(holders) == 0 {
		holders = []api.Holder{{Owner: l.Owner, Holder: l.Holder, Fence: l.Fence, Remaining: l.Remaining, Age: l.Age}}
	}
	var rows []uiRow
	for i, x := range holders {
		row := uiRow{Key: l.Key, Claim: claim, Holder: x.Holder, Owner: x.Owner, Fence: x.Fence, Age: uiAge(x.Age),
			Left: x.Remaining.Round(time.Millisecond).String(), First: i == 0, Force: force && i == 0, InCycle: inCycle}
		if x.Mode != "" {
			row.Claim += " (" + x.Mode + ")"
		}
		if i == 0 {
			row.Waiters = l.Waiters
			for _, q := range l.Queue {
				row.Queue = append(row.Queue, uiWaiter{Owner: q.Owner, Holder: q.Holder, Mode: q.Mode,
					Age: uiAge(time.Duration(q.AgeMillis) * time.Millisecond)})
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// uiAge is an age as the page shows it; "" when the node does not know
// it, which the page says as "unknown" with uiAgeUnknown's reason.
func uiAge(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return d.Round(100 * time.Millisecond).String()
}

// uiAgeUnknown is why the node that renders the page (the leader) shows
// no age for a grant or a waiter: ages are what that node saw applied,
// and neither the log's entries it never applied nor a snapshot of the
// table say when a grant was made or a waiter queued.
func uiAgeUnknown(node string) string {
	return "Not known: it began before node " + node + " started or last installed a snapshot of the lock table, which does not record when."
}

// uiBase is the view every page starts from: who is signed in, and this
// node as it sees itself.
func (h *handler) uiBase(r *http.Request, title string) uiView {
	c := caller(r)
	return uiView{Title: title, Node: h.store.Status(r.Context()), Via: r.Header.Get(api.HeaderForwardedBy),
		Cred: c.Name, Role: string(c.Role), Scope: c.Scope(), status: http.StatusOK}
}

// uiFail answers an error page.
func (h *handler) uiFail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	v := uiView{Title: http.StatusText(status), Message: msg, status: status, template: "error"}
	if c, _ := r.Context().Value(credKey{}).(*access.Credential); c != nil {
		v = h.uiBase(r, http.StatusText(status))
		v.Message, v.status, v.template = msg, status, "error"
	}
	h.uiRender(w, v)
}

// uiRender writes v with its template, under a Content-Security-Policy
// that lets in only the page's own inline style and script (by a nonce
// drawn for this answer) and connections to the node itself.
func (h *handler) uiRender(w http.ResponseWriter, v uiView) {
	var b [18]byte
	_, _ = rand.Read(b[:])
	// Hex, not base64: html/template would escape a "+" in the
	// attribute, and the nonce would no longer match the header's.
	v.Nonce = hex.EncodeToString(b[:])
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+v.Nonce+"'; style-src 'nonce-"+v.Nonce+"'; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	if v.status == 0 {
		v.status = http.StatusOK
	}
	w.WriteHeader(v.status)
	_ = uiTemplates.ExecuteTemplate(w, v.template, v)
}
