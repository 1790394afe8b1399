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
