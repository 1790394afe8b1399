package drivers_test

import (
	"testing"

	"github.com/zerotal/lock/drivers"
)

func TestHolderOf_ReadsTheDescriptionNeverTheToken(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef"
	for owner, want := range map[string]string{
		token:                                "",
		token + ":deploy@host-3":             "deploy@host-3",
		token + ":":                          "",
		token + ":a:b":                       "a:b",
		"deploy-job":                         "deploy-job", // an owner an application chose names itself
		"0123456789ABCDEF0123456789ABCDEF:x": "0123456789ABCDEF0123456789ABCDEF:x",
		token + "x":                          token + "x",
		"":                                   "",
	} {
		if got := drivers.HolderOf(owner); got != want {
			t.Errorf("HolderOf(%q) = %q; want %q", owner, got, want)
		}
	}
}

func TestSplitOwner_OnlyTheTokenedForm(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef"
	for owner, want := range map[string]struct {
		holder string
		ok     bool
	}{
		token + ":deploy@host-3":             {"deploy@host-3", true},
		token + ":":                          {"", true},
		token + ":a:b":                       {"a:b", true},
		token:                                {"", false}, // a bare token has no holder part
		"deploy-job":                         {"", false},
		"0123456789ABCDEF0123456789ABCDEF:x": {"", false},
		token + "x":                          {"", false},
	} {
		tok, holder, ok := drivers.SplitOwner(owner)
		if holder != want.holder || ok != want.ok || (ok && tok != token) {
			t.Errorf("SplitOwner(%q) = %q %q %v; want holder %q, %v", owner, tok, holder, ok, want.holder, want.ok)
		}
	}
}
