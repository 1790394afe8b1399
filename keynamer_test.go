package lock_test

import (
	"testing"

	lock "github.com/zerotal/lock"
)

// namedFake is a backend that chooses its own default prefix, as the
// cluster client does.
type namedFake struct{ *fakeDriver }

func (namedFake) DefaultPrefix() string { return "" }

func TestManager_PrefixComesFromTheDriverUnlessGiven(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    *lock.Manager
		want string
	}{
		{"driver without a choice", lock.New(newFake()), lock.DefaultPrefix},
		{"driver that names keys as written", lock.New(namedFake{newFake()}), ""},
		{"explicit prefix wins", lock.New(namedFake{newFake()}, lock.WithPrefix("app:")), "app:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer tc.m.Close()
			if got := tc.m.Prefix(); got != tc.want {
				t.Fatalf("Prefix() = %q, want %q", got, tc.want)
			}
		})
	}
}
