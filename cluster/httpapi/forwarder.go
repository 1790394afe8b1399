package httpapi

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zerotal/lock/api"
)

// A request a follower forwards for a credential a client certificate
// gave carries that credential's name (api.HeaderCredential) and the
// follower's proof (api.HeaderCredentialProof):
//
//	<unix milliseconds>.<nonce, 16 bytes hex>.<HMAC-SHA256 hex>
//
// The HMAC is keyed by the raft secret, which only the nodes hold, and
// covers the cluster ID, the credential's name, the forwarding node's ID,
// the method, the request URI, the SHA-256 of the body, the time and the
// nonce. So a proof read off the way (the nodes talk over mutual TLS when
// certificates are credentials, but a proxy or a log may see it) admits
// nothing else: not another body, path or method, not after
// ForwardProofWindow, and not the same request twice (the leader
// remembers the nonces it accepted for as long as their time is inside
// the window). The nodes' clocks must agree within the window: a proof
// from a node whose clock is further off is refused, and the refusal
// logged with the difference.

// ForwardProofWindow is how far a forwarded proof's time may be from the
// receiving node's clock, either way.
const ForwardProofWindow = 10 * time.Second

// maxRememberedProofs bounds the nonces a node keeps to refuse a replay:
// proofs accepted within two windows, so about 13,000 forwarded
// certificate requests a second. Only a node with the raft secret can add
// one. Beyond it a forwarded proof is refused until older ones expire.
const maxRememberedProofs = 1 << 18

const forwardProofLabel = "zerotal-lock forwarded credential v2"

// forwardNow, when set, is the clock of proofs (a test's); nil: time.Now.
var forwardNow atomic.Pointer[func() time.Time]

func proofClock() time.Time {
	if f := forwardNow.Load(); f != nil {
		return (*f)()
	}
	return time.Now()
}

// forwardMAC is the HMAC of a forwarded request's proof.
func forwardMAC(key []byte, clusterID, name, by, method, uri string, body []byte, ms int64, nonce []byte) []byte {
	m := hmac.New(sha256.New, key)
	sum := sha256.Sum256(body)
	for _, part := range [][]byte{[]byte(forwardProofLabel), []byte(clusterID), []byte(name), []byte(by),
		[]byte(method), []byte(uri), sum[:], []byte(strconv.FormatInt(ms, 10)), nonce} {
		// Each part with its length first: no two requests' parts join
		// into the same bytes.
		_ = binary.Write(m, binary.BigEndian, uint32(len(part)))
		m.Write(part)
	}
	return m.Sum(nil)
}

// forwardProof is this node's proof for r, forwarded with body for the
// credential name.
func (h *handler) forwardProof(r *http.Request, name string, body []byte) string {
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce) // never fails (crypto/rand)
	ms := proofClock().UnixMilli()
	mac := forwardMAC(h.opts.ForwardKey, h.opts.ClusterID, name, h.opts.NodeID, r.Method, r.URL.RequestURI(), body, ms, nonce)
	return fmt.Sprintf("%d.%x.%x", ms, nonce, mac)
}

// checkForwardProof says why r's proof does not admit the credential
// name, or nil. It reads r's body (readBody holds it in memory already)
// and puts it back.
func (h *handler) checkForwardProof(r *http.Request, name string) error {
	if len(h.opts.ForwardKey) == 0 {
		return errors.New("this node has no raft secret to check it with")
	}
	parts := strings.Split(r.Header.Get(api.HeaderCredentialProof), ".")
	if len(parts) != 3 {
		return errors.New("malformed proof")
	}
	ms, err1 := strconv.ParseInt(parts[0], 10, 64)
	nonce, err2 := hex.DecodeString(parts[1])
	got, err3 := hex.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || len(nonce) != 16 {
		return errors.New("malformed proof")
	}
	body, err := peekBody(r)
	if err != nil {
		return err
	}
	by := r.Header.Get(api.HeaderForwardedBy)
	want := forwardMAC(h.opts.ForwardKey, h.opts.ClusterID, name, by, r.Method, r.URL.RequestURI(), body, ms, nonce)
	if !hmac.Equal(got, want) {
		return errors.New("the proof is not this request's (made for another request, or with another raft secret)")
	}
	now := proofClock()
	at := time.UnixMilli(ms)
	if off := now.Sub(at); off > ForwardProofWindow || off < -ForwardProofWindow {
		return fmt.Errorf("the proof was made %v from this node's clock, outside the %v window (a replay, or the clocks of %s and this node are apart)",
			off.Round(time.Millisecond), ForwardProofWindow, by)
	}
	return h.proofs.remember([16]byte(nonce), at, now)
}

// peekBody reads r's body and puts back what it read.
func peekBody(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	if err != nil {
		return nil, fmt.Errorf("cannot read the body: %w", err)
	}
	if len(body) > MaxBodyBytes {
		return nil, errors.New("the body is over the limit a node forwards")
	}
	return body, nil
}

// seenProofs are the nonces of the proofs a node accepted, each kept
// until its time is out of the window.
type seenProofs struct {
	mu      sync.Mutex
	seen    map[[16]byte]time.Time // nonce → the proof's time
	pruneAt int                    // prune the expired ones at this many
	pruned  time.Time
}

// remember records nonce, made at at, or says it was seen already.
func (s *seenProofs) remember(nonce [16]byte, at, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.seen[nonce]; ok {
		return errors.New("the proof was used already (a replay)")
	}
	if s.seen == nil {
		s.seen = map[[16]byte]time.Time{}
	}
	// Pruning scans them all: only once their number has doubled, and
	// at most ten times a second when full.
	if len(s.seen) >= s.pruneAt && now.Sub(s.pruned) >= 100*time.Millisecond {
		for n, t := range s.seen {
			if now.Sub(t) > ForwardProofWindow {
				delete(s.seen, n)
			}
		}
		s.pruned, s.pruneAt = now, min(max(1024, 2*len(s.seen)), maxRememberedProofs)
	}
	if len(s.seen) >= maxRememberedProofs {
		return fmt.Errorf("%d forwarded proofs within the window already, the most remembered", maxRememberedProofs)
	}
	s.seen[nonce] = at
	return nil
}
