// Package driverstest is the conformance suite every lock driver must pass.
//
// A driver's test calls Run with a function that builds a Harness on a fresh
// backend. The suite opens two (or more) independent handles on that backend
// and checks the contract of package drivers: owner-guarded release, force
// release, exists, TTL expiry with real short TTLs, refresh and extension
// that never re-grant, fences that strictly increase, context cancellation,
// Close, a concurrent hammer with an in-test exclusion check, and, for a
// driver that declares drivers.Capabilities.MaxHold, the cap on total
// hold time (a refresh loop ends at the cap, the next waiter is served
// there, a refresh keeps the first grant's cap, a waiter's counts from its
// grant). A driver that declares drivers.Capabilities.Shared (and
// implements drivers.Inspector) also runs RunShared; bench/manager
// measures a backend through the Manager.
//
//	func TestConformance(t *testing.T) {
//		driverstest.Run(t, func(t *testing.T) driverstest.Harness { return myHarness(t) })
//	}
package driverstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
)

// Harness opens handles on one backend.
type Harness interface {
	// NewDriver returns a new, independent handle (its own connection or
	// pool) on the backend shared by every handle of this harness. The
	// suite closes the handles it opens.
	NewDriver(ctx context.Context) (drivers.Driver, error)
}

// Run runs the whole conformance suite. newHarness is called once per
// subtest; it may return harnesses sharing one backend, because every
// subtest uses keys of its own.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	t.Helper()
	runSections(t, newHarness, []section{
		{"AcquireHeldRelease", testAcquireHeldRelease},
		{"ArbitraryKeys", testArbitraryKeys},
		{"OwnerGuardsRelease", testOwnerGuardsRelease},
		{"SameOwnerRefreshKeepsFence", testSameOwnerRefreshKeepsFence},
		{"ForceRelease", testForceRelease},
		{"ExistsOnFreeKey", testExistsOnFreeKey},
		{"TTLExpiry", testTTLExpiry},
		{"ExtendOwnerGuarded", testExtendOwnerGuarded},
		{"ExtendKeepsLockAlive", testExtendKeepsLockAlive},
		{"ExtendNeverRegrants", testExtendNeverRegrants},
		{"SameOwnerAfterExpiryIsNewGrant", testSameOwnerAfterExpiryIsNewGrant},
		{"FencesStrictlyIncrease", testFencesStrictlyIncrease},
		{"HolderReported", testHolderReported},
		{"AcquireAll", testAcquireAll},
		{"AcquireAllWait", testAcquireAllWait},
		{"CancelledContext", testCancelledContext},
		{"WaitHandOffOnRelease", testWaitHandOffOnRelease},
		{"WaitHandOffOnExpiry", testWaitHandOffOnExpiry},
		{"WaitDeadline", testWaitDeadline},
		{"Close", testClose},
		{"Hammer", testHammer},
		{"HammerWaiters", testHammerWaiters},
		{"MaxHoldEndsRefreshLoop", testMaxHoldEndsRefreshLoop},
		{"MaxHoldRefreshKeepsCap", testMaxHoldRefreshKeepsCap},
		{"MaxHoldWaiterCapFromGrant", testMaxHoldWaiterCapFromGrant},
	})
}

// section is one subtest of a suite: its name and what it checks.
type section struct {
	name string
	fn   func(t *testing.T, s *suite)
}

// runSections runs each section as a subtest on a harness of its own.
func runSections(t *testing.T, newHarness func(t *testing.T) Harness, sections []section) {
	t.Helper()
	for _, sec := range sections {
		t.Run(sec.name, func(t *testing.T) {
			sec.fn(t, &suite{t: t, h: newHarness(t)})
		})
	}
}

type suite struct {
	t *testing.T
	h Harness
}

// driver opens a handle and closes it when the test ends.
func (s *suite) driver() drivers.Driver {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := s.h.NewDriver(ctx)
	if err != nil {
		s.t.Fatalf("NewDriver: %v", err)
	}
	s.t.Cleanup(func() { _ = d.Close() })
	return d
}

// key returns a key no other test uses, so harnesses may share a backend.
func (s *suite) key(name string) string {
	return "driverstest:" + token()[:12] + ":" + name
}

func token() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustAcquire(t *testing.T, d drivers.Driver, key, owner string, ttl time.Duration) uint64 {
	t.Helper()
	fence, ok, err := Take(ctxFor(t), d, key, owner, ttl)
	if err != nil {
		t.Fatalf("Acquire(%q, %q): %v", key, owner, err)
	}
	if !ok {
		t.Fatalf("Acquire(%q, %q): not acquired, want acquired", key, owner)
	}
	return fence
}

func mustNotAcquire(t *testing.T, d drivers.Driver, key, owner string, ttl time.Duration) {
	t.Helper()
	_, ok, err := Take(ctxFor(t), d, key, owner, ttl)
	if err != nil {
		t.Fatalf("Acquire(%q, %q): %v", key, owner, err)
	}
	if ok {
		t.Fatalf("Acquire(%q, %q): acquired, want held by another owner", key, owner)
	}
}

func mustExist(t *testing.T, d drivers.Driver, key string, want bool) {
	t.Helper()
	got, err := d.Exists(ctxFor(t), key)
	if err != nil {
		t.Fatalf("Exists(%q): %v", key, err)
	}
	if got != want {
		t.Fatalf("Exists(%q) = %v, want %v", key, got, want)
	}
}

func mustRelease(t *testing.T, d drivers.Driver, key, owner string, want bool) {
	t.Helper()
	got, err := d.Release(ctxFor(t), key, owner)
	if err != nil {
		t.Fatalf("Release(%q, %q): %v", key, owner, err)
	}
	if got != want {
		t.Fatalf("Release(%q, %q) = %v, want %v", key, owner, got, want)
	}
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true within %v", what, within)
		}
		time.Sleep(5 * time.Millisecond) // polling interval, not synchronisation
	}
}

func fmtFences(f []uint64) string { return fmt.Sprint(f) }
