package postgres

import (
	"strconv"
	"testing"
)

// parseLetIn reads any owner and key back, spaces and digits included,
// and refuses a payload of another form.
func TestParseLetIn(t *testing.T) {
	for _, c := range []struct{ key, owner string }{{"k", "o"}, {"a key 1 2", "an owner 3 4"}, {"", "x"}, {"ü ß", ""}} {
		payload := "42 7 " + strconv.Itoa(len(c.owner)) + " " + c.owner + " " + c.key
		key, owner, seq, fence, ok := parseLetIn(payload)
		if !ok || key != c.key || owner != c.owner || seq != 7 || fence != 42 {
			t.Errorf("parseLetIn(%q) = %q, %q, %d, %d, %v", payload, key, owner, seq, fence, ok)
		}
	}
	for _, p := range []string{"", "k", "1 2", "1 2 9 short", "x 2 1 o k", "1 x 1 o k", "1 2 -1 o k", "1 2 1 ok"} {
		if _, _, _, _, ok := parseLetIn(p); ok {
			t.Errorf("parseLetIn(%q) ok; want refused", p)
		}
	}
}
