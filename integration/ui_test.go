package integration

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/zerotal/lock"
	_ "github.com/zerotal/lock/drivers/cluster" // lock.Open of the "cluster" driver
	"github.com/zerotal/lock/internal/testkit/poll"
)

// chromiumPath is Debian's chromium (scripts/test-deps.sh installs it).
const chromiumPath = "/usr/bin/chromium"

// uiSeen is how soon the lock page must show a change: the issue's
// "within a second" of it.
const uiSeen = time.Second

// browserTab is one tab of a headless Chromium, signed in to the lock
// page with one token (sent as the page's Basic credentials).
type browserTab struct {
	t    *testing.T
	ctx  context.Context
	name string
}

// newBrowser starts a headless Chromium, closed when the test ends, and
// returns its first tab's context.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	if _, err := exec.LookPath(chromiumPath); err != nil {
		t.Fatalf("the lock page's test needs Chromium at %s (scripts/test-deps.sh installs the Debian package chromium): %v", chromiumPath, err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromiumPath), chromedp.NoSandbox, chromedp.Headless,
		chromedp.DisableGPU, chromedp.WindowSize(1280, 1000), chromedp.UserDataDir(t.TempDir()))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		cancel()
		cancelAlloc()
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		cancelAlloc() // waits for the browser process to exit
	})
	return ctx
}

// tab opens a tab of the browser at browser that sends token with every
// request, as a browser does once signed in with HTTP Basic.
func tab(t *testing.T, browser context.Context, name, token string) *browserTab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte(name+":"+token))
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": auth}}); err != nil {
		t.Fatal(err)
	}
	return &browserTab{t: t, ctx: ctx, name: name}
}

func (b *browserTab) open(u string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 15*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(u), chromedp.WaitVisible(chromedp.CSS("#live"))); err != nil {
		b.screenshot("failed-open")
		b.t.Fatalf("%s: open %s: %v", b.name, u, err)
	}
}

// eval is the string the expression js gives in the tab now ("" on an
// error: the page may be between two renderings).
func (b *browserTab) eval(js string) string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
	if err != nil {
		return ""
	}
	return s
}

// until waits up to timeout for js to give want, and says how long it took.
func (b *browserTab) until(timeout time.Duration, what, js, want string) time.Duration {
	b.t.Helper()
	start := time.Now()
	var got string
	if !poll.Wait(timeout, func() bool { got = b.eval(js); return got == want }) {
		b.screenshot("failed-" + strings.ReplaceAll(what, " ", "-"))
		b.t.Fatalf("%s: %s: the page shows %q after %v, want %q", b.name, what, got, timeout, want)
	}
	return time.Since(start)
}

// screenshot keeps the tab's page as name.png among the test's artefacts.
func (b *browserTab) screenshot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100: a PNG
	if err != nil {
		b.t.Errorf("%s: screenshot %s: %v", b.name, name, err)
		return
	}
	path := filepath.Join(b.t.ArtifactDir(), name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Error(err)
	}
}

func (b *browserTab) click(sel string) {
	b.t.Helper()
	b.do("click "+sel, chromedp.Click(chromedp.CSS(sel)))
}

// do runs step in the tab, for at most 15s.
func (b *browserTab) do(what string, step chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 15*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, step); err != nil {
		b.screenshot("failed-" + strings.ReplaceAll(what, " ", "-"))
		b.t.Fatalf("%s: %s: %v", b.name, what, err)
	}
}

// The page's expressions.
func rowText(key, class string) string {
	return `(() => { const r = document.querySelector('tr[data-key="` + key + `"]'); const c = r && r.querySelector('.` + class + `'); return c ? c.textContent : "" })()`
}

func waitersOf(key string) string {
	return `Array.from(document.querySelectorAll('tr[data-key="` + key + `"] .waiter')).map(e => e.textContent).join(",")`
}

const cyclesText = `(() => { const c = document.querySelector("#cycles"); return c ? c.textContent : "" })()`

// TestUI_LivePageInABrowser opens the lock page of a real cluster in a
// headless Chromium, on a follower (which forwards the page to the
// leader and sends its own change events), and checks what an operator
// and a confined client see as locks taken through the Go API come and
// go: a grant appears within a second with its holder and fence, waiters
// in their order, a two-key wait cycle flagged; the operator's
// force-release, confirmed, frees the key and its holder's callback is
// told ErrLostTaken; the client sees only its prefix and no button, and
// a POST it forges is refused. A screenshot of each state is kept as an
// artefact (go test -artifacts keeps them).
func TestUI_LivePageInABrowser(t *testing.T) {
	c := newCluster(t)
	leader := c.waitLeader(30 * time.Second)
	follower := c.nodes[0]
	if follower == leader {
		follower = c.nodes[1]
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	manager := func(holder, token string) *lock.Manager {
		m, err := lock.Open(ctx, lock.Config{Driver: "cluster", Holder: holder, Cluster: lock.ClusterConfig{Addrs: c.addrs(), Token: token}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Close() })
		return m
	}
	mA, mB, mC, mT := manager("A", clientToken), manager("B", clientToken), manager("C", clientToken), manager("T", teamToken)

	browser := newBrowser(t)
	ops := tab(t, browser, "ops", operatorToken)
	ops.open("http://" + follower.httpAddr + "/ui")
	ops.until(10*time.Second, "an empty table", `document.querySelector("#held").textContent`, "0")
	ops.screenshot("0-empty")

	// Every holder runs in a goroutine of its own until done is closed
	// (or its lock is lost); each tells what happened on a channel.
	done := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	defer close(done)
	hold := func(ctx context.Context) error {
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	const ttl = 10 * time.Second
	wait := lock.WithTimeout(60 * time.Second)
	fenceA, fenceB := make(chan uint64, 1), make(chan uint64, 1)
	waitK2 := make(chan struct{})
	lostA := make(chan error, 1)
	gotK1 := make(chan struct{}, 1)
	go1 := func(f func()) { wg.Add(1); go func() { defer wg.Done(); f() }() }

	// A holds ui/k1 and, once told, waits for ui/k2 as well.
	go1(func() {
		_ = mA.Block(ctx, "ui/k1", ttl, func(ctx context.Context, l *lock.Lock) error {
			fenceA <- l.Fence()
			select {
			case <-waitK2:
				_ = mA.Block(ctx, "ui/k2", ttl, func(ctx context.Context, _ *lock.Lock) error { return hold(ctx) }, wait, lock.WithRefresh())
			case <-done:
			case <-ctx.Done():
			}
			lostA <- context.Cause(ctx)
			return nil
		}, wait, lock.WithRefresh())
	})
	var fa uint64
	select {
	case fa = <-fenceA:
	case <-ctx.Done():
		t.Fatal("A did not get ui/k1")
	}
	took := ops.until(5*time.Second, "A's grant", rowText("ui/k1", "holder")+` + "/" + `+rowText("ui/k1", "fence"), "A/"+strconv.FormatUint(fa, 10))
	t.Logf("A's grant of ui/k1 (fence %d) shown %v after it was made", fa, took)
	if took > uiSeen {
		t.Errorf("A's grant was shown %v after it was made, want within %v", took, uiSeen)
	}
	ops.screenshot("1-held")

	// B holds ui/k2 and waits for ui/k1; C waits for ui/k1 after B.
	go1(func() {
		_ = mB.Block(ctx, "ui/k2", ttl, func(ctx context.Context, l *lock.Lock) error {
			fenceB <- l.Fence()
			return mB.Block(ctx, "ui/k1", ttl, func(ctx context.Context, _ *lock.Lock) error {
				gotK1 <- struct{}{}
				return hold(ctx)
			}, wait, lock.WithRefresh())
		}, wait, lock.WithRefresh())
	})
	<-fenceB
	ops.until(5*time.Second, "B waiting for ui/k1", waitersOf("ui/k1"), "B")
	go1(func() {
		_ = mC.Block(ctx, "ui/k1", ttl, func(ctx context.Context, _ *lock.Lock) error { return hold(ctx) }, wait, lock.WithRefresh())
	})
	took = ops.until(5*time.Second, "the waiters of ui/k1 in order", waitersOf("ui/k1"), "B,C")
	t.Logf("C's place behind B shown %v after it was asked for", took)
	ops.screenshot("2-waiters")
	if got := ops.eval(cyclesText); got != "" {
		t.Fatalf("a cycle is flagged before there is one: %q", got)
	}

	// A now waits for ui/k2, which B holds while it waits for ui/k1.
	close(waitK2)
	ops.until(5*time.Second, "A waiting for ui/k2", waitersOf("ui/k2"), "A")
	ops.until(5*time.Second, "the cycle flagged", `String(`+cyclesText+`.includes("A ⇄ B"))`, "true")
	ops.screenshot("3-cycle")

	// The team's client sees its own prefix only, and no button.
	team := tab(t, browser, "team", teamToken)
	go1(func() {
		_ = mT.Block(ctx, "ui/team/job", ttl, func(ctx context.Context, _ *lock.Lock) error { return hold(ctx) }, wait, lock.WithRefresh())
	})
	team.open("http://" + leader.httpAddr + "/ui")
	team.until(5*time.Second, "the team's key", rowText("ui/team/job", "holder"), "T")
	if got := team.eval(`String(document.querySelectorAll('tr[data-key^="ui/k"]').length) + "/" + document.querySelectorAll("button.force").length`); got != "0/0" {
		t.Errorf("the team's page shows %s keys of others/force buttons, want 0/0", got)
	}
	team.screenshot("4-client")
	// A POST it forges, with the operator page's form token, is refused.
	token := ops.eval(`document.querySelector('tr[data-key="ui/team/job"] input[name=token]').value`)
	form := url.Values{"key": {"ui/team/job"}, "token": {token}, "confirm": {"yes"}}
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+leader.httpAddr+"/ui/force-release", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("team", teamToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("the team's forged force-release: %s, want 403", resp.Status)
	}
	team.until(5*time.Second, "the team's key still held", rowText("ui/team/job", "holder"), "T")

	// The operator force-releases ui/k1: a confirmation, then the key
	// goes to its first waiter, B, and A is told it lost it.
	ops.click(`tr[data-key="ui/k1"] button.force`)
	ops.do("wait for the confirmation", chromedp.WaitVisible(chromedp.CSS("#confirm")))
	ops.screenshot("5-confirm")
	ops.click("#confirm")
	ops.until(5*time.Second, "the release noted", `(() => { const r = document.querySelector("#released"); return r ? r.textContent : "" })()`, "Force-released ui/k1.")
	select {
	case err := <-lostA:
		if !errors.Is(err, lock.ErrLostTaken) {
			t.Errorf("A's callback was told %v, want ErrLostTaken", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("A was not told it lost ui/k1 within 20s of the force-release")
	}
	select {
	case <-gotK1:
	case <-time.After(20 * time.Second):
		t.Fatal("B, the first waiter, did not get ui/k1")
	}
	ops.until(5*time.Second, "ui/k1 held by B, C still waiting", rowText("ui/k1", "holder")+` + "/" + `+waitersOf("ui/k1"), "B/C")
	ops.until(5*time.Second, "the cycle gone", cyclesText, "")
	ops.screenshot("6-released")
}
