package main

import (
	"github.com/spf13/cobra"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/election"
)

// registerOutput adds -o (--output) to a read command that has no
// adminFlags: table, or json in the HTTP API's schema.
func registerOutput(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVarP(p, "output", "o", "table", "`format`: table, or json (the HTTP API's schema)")
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return []cobra.Completion{"table", "json"}, cobra.ShellCompDirectiveNoFileComp
	})
}

// checkOutputFormat refuses an -o the command cannot print.
func checkOutputFormat(o string) error {
	if o != "table" && o != "json" {
		return usagef("-o %q: the formats are table and json", o)
	}
	return nil
}

// leaderLock is a leadership in the HTTP API's schema, as GET /v1/lock
// answers for the election's lock: the election's name as the key, the
// leader's value as the holder, the term as the fence. The owner (whose
// token would let its bearer release the leader's lock) is left out;
// nobody leading is fence 0, which no grant has.
func leaderLock(name string, l election.Leader, leading bool) api.Lock {
	if !leading {
		return api.Lock{Key: name}
	}
	return api.Lock{Key: name, Holder: l.Value, Fence: l.Term, Remaining: l.Remaining}
}
