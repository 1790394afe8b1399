package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zerotal/lock/cluster/access"
	"github.com/zerotal/lock/cmd/lockcluster/internal/cliflags"
)

const tokenExamples = `  # a client token for team A's workers, confined to keys under jobs/a/
  lockcluster token --name team-a --role client --prefixes jobs/a/ >> /etc/lock/tokens
  # then, on every node: kill -HUP <agent pid>

  # an operator token (join, leave, force-release, debug, metrics and every lock right)
  lockcluster token --name ops --role operator`

const tokenNotes = `Prints a new random token on stderr, once (it is stored nowhere: give it to the client), and on
stdout the line of the token file that admits it, which holds only the token's SHA-256 digest.
Roles: client (acquire, release, extend, get, list, the stream, status), operator (every right),
metrics (/metrics only). --prefixes confines the lock rights to keys that start with one of them.
A TLS client certificate maps to a role by a line whose last field is cn:COMMON-NAME.`

func newTokenCmd(e *env) *cobra.Command {
	var name, role, prefixes string
	cmd := &cobra.Command{
		Use:         "token --name NAME --role ROLE [--prefixes P,...]",
		Short:       "make a token and its line for --token-file",
		Example:     tokenExamples,
		Annotations: map[string]string{annNotes: tokenNotes},
		Args:        noArgs,
	}
	fs := cmd.Flags()
	fs.StringVar(&name, "name", "", "the credential's name, in logs and refusals (required)")
	fs.StringVar(&role, "role", "", "client, operator or metrics (required)")
	_ = cmd.RegisterFlagCompletionFunc("role", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return []cobra.Completion{"client", "operator", "metrics"}, cobra.ShellCompDirectiveNoFileComp
	})
	fs.StringVar(&prefixes, "prefixes", "*", "comma-separated key prefixes the lock rights reach; * for every key")
	// A shell set up for an agent or a client must not name the token to
	// make: each is said on the command line.
	for _, f := range []string{"name", "role", "prefixes"} {
		cliflags.NoEnv(cmd, f, "it describes the token to make")
	}
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if name == "" || strings.ContainsAny(name, " \t\r\n#") {
			return usagef("--name is required, without spaces or #")
		}
		if !slices.Contains(access.Roles(), access.Role(role)) {
			return usagef("--role must be one of %v", access.Roles())
		}
		if role == string(access.RoleMetrics) {
			prefixes = "-"
		}
		if strings.ContainsAny(prefixes, " \t\r\n") || prefixes == "" {
			return usagef("--prefixes must be a comma-separated list without spaces, or *")
		}
		buf := make([]byte, 24)
		if _, err := rand.Read(buf); err != nil {
			return err
		}
		token := "zlt_" + hex.EncodeToString(buf)
		line := fmt.Sprintf("%s %s %s sha256:%s", name, role, prefixes, access.HashToken(token))
		if _, err := access.Parse(strings.NewReader(line), "--"); err != nil {
			return usagef("%v", err)
		}
		fmt.Fprintf(e.stderr, "token for %s (shown once, stored nowhere): %s\n", name, token)
		fmt.Fprintln(e.stdout, line)
		return nil
	}
	return cmd
}
