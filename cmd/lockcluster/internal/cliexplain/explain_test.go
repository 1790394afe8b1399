package cliexplain

import "testing"

// Strip removes the layers' prefixes that the library's errors nest.
func TestStrip(t *testing.T) {
	for in, want := range map[string]string{
		`lock: acquire "k": client: acquire: client: server answered 401 unauthorized: cluster: missing or wrong bearer token`: `acquire "k": acquire: server answered 401 unauthorized: missing or wrong bearer token`,
		"client: list: client: list: x": "list: x",
		"lock: invalid key: empty":      "invalid key: empty",
		"plain":                         "plain",
	} {
		if got := Strip(in); got != want {
			t.Errorf("Strip(%q) = %q, want %q", in, got, want)
		}
	}
}
