package cluster

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/zerotal/lock/drivers"
)

// tableLimit is a limit the replicated table applies as it applies each
// entry. Every member must use the same value: a member with a smaller
// cap would refuse an entry the others applied, and its table, which it
// serves from once it leads, would differ from theirs. A node reports
// them (api.NodeInfo.Limits) and a leader adds only a node whose limits
// equal its own; a limit added to the table is a line here.
type tableLimit struct {
	name string // its key in api.NodeInfo.Limits
	flag string // lockcluster agent's flag for it
	of   func(Config) int
}

var tableLimits = []tableLimit{
	{"max_keys", "--max-keys", func(c Config) int { return c.MaxKeys }},
	{"max_waiters_per_key", "--max-waiters", func(c Config) int { return c.MaxWaitersPerKey }},
	{"max_holders_per_key", "--max-holders", func(c Config) int { return c.MaxHoldersPerKey }},
}

// tableLimitsOf is cfg's table limits by name, defaults filled in.
func tableLimitsOf(cfg Config) map[string]int {
	m := make(map[string]int, len(tableLimits))
	for _, l := range tableLimits {
		m[l.name] = l.of(cfg)
	}
	return m
}

// limitsDiffer says which table limits differ between ours (this node,
// named us) and theirs (node them's report), or is "". A limit a node
// does not report (its release has none) counts as no limit, as it
// applies none.
func limitsDiffer(ours, theirs map[string]int, us, them string) string {
	var diffs, fix []string
	for _, l := range tableLimits {
		o, ok := ours[l.name]
		if !ok {
			o = drivers.Unlimited
		}
		t, ok := theirs[l.name]
		if !ok {
			t = drivers.Unlimited
		}
		if o != t {
			diffs = append(diffs, fmt.Sprintf("%s %s on %s, %s on %s", l.flag, limitText(t), them, limitText(o), us))
			fix = append(fix, fmt.Sprintf("%s %s", l.flag, strconv.Itoa(o)))
		}
	}
	if len(diffs) == 0 {
		return ""
	}
	return fmt.Sprintf("node %s applies the replicated table with other limits than %s (%s): every member must use the same values, "+
		"or their tables part (start %s with %s)", them, us, strings.Join(diffs, "; "), them, strings.Join(fix, " "))
}

func limitText(v int) string {
	if v == drivers.Unlimited {
		return "unlimited"
	}
	return strconv.Itoa(v)
}
