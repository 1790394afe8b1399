package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zerotal/lock/cluster/access"
	"github.com/zerotal/lock/cmd/lockcluster/internal/cliflags"
)

const tokenExamples = `  # a client token for team A's workers, confined to keys under jobs/a/: the token in a
  # variable, its line appended to the agents' token file
  TOKEN=$(lockcluster token --name team-a --role client --prefixes jobs/a/ --token-file /etc/lock/tokens)
  # then, on every node: kill -HUP <agent pid>

  # an operator token (join, leave, force-release, debug, metrics and every lock right);
  # without --token-file its line goes to stderr
  lockcluster token --name ops --role operator > ops.token`

const tokenNotes = `Prints a new random token on stdout, alone (it is stored nowhere: give it to the client), and
the line of the token file that admits it, which holds only the token's SHA-256 digest: on
stderr, or appended to the file --token-file names (created with mode 0600), after checking
that the file with it still loads (a name used twice is refused, and the file left as it was).
Roles: client (acquire, release, extend, get, list, the stream, status), operator (every right),
metrics (/metrics only). --prefixes confines the lock rights to keys that start with one of them.
A TLS client certificate maps to a role by a line whose last field is cn:COMMON-NAME.`

func newTokenCmd(e *env) *cobra.Command {
	var name, role, prefixes, file string
	cmd, fs := newCommand("token --name NAME --role ROLE [--prefixes P,...]", "make a token and its line for --token-file",
		tokenExamples, tokenNotes)
	fs.SortFlags = true // its four flags and help by name, as its help has always shown them
	fs.StringVar(&name, "name", "", "the credential's name, in logs and refusals (required)")
	fs.StringVar(&role, "role", "", "client, operator or metrics (required)")
	_ = cmd.RegisterFlagCompletionFunc("role", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return []cobra.Completion{"client", "operator", "metrics"}, cobra.ShellCompDirectiveNoFileComp
	})
	fs.StringVar(&prefixes, "prefixes", "*", "comma-separated key prefixes the lock rights reach; * for every key")
	fs.StringVar(&file, "token-file", "", "append the token's line to this `file` (an agent's --token-file) instead of printing it on stderr")
	// A shell set up for an agent or a client must not name the token to
	// make, nor the file it goes to: each is said on the command line.
	for _, f := range []string{"name", "role", "prefixes", "token-file"} {
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
		if file != "" {
			if err := appendTokenLine(file, line); err != nil {
				return err
			}
			fmt.Fprintf(e.stderr, "the token for %s is on stdout, shown once and stored nowhere; its line is appended to %s: kill -HUP the agents that read it\n", name, file)
		} else {
			fmt.Fprintf(e.stderr, "the token for %s is on stdout, shown once and stored nowhere; the line of the token file that admits it:\n%s\n", name, line)
		}
		// Alone on stdout, so that TOKEN=$(lockcluster token ...) is the token.
		fmt.Fprintln(e.stdout, token)
		return nil
	}
	return cmd
}

// appendTokenLine appends line to the token file path (created 0600),
// after checking that the file with it still loads: a file that does not
// would keep every agent that reads it on its old credentials.
func appendTokenLine(path, line string) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if len(old) > 0 && old[len(old)-1] != '\n' {
		line = "\n" + line
	}
	if _, err := access.Parse(strings.NewReader(string(old)+line+"\n"), path); err != nil {
		return usagef("%s with the new line would not load, so it is left as it was: %v", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
