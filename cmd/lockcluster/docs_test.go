package main

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/zerotal/lock/api"
	"github.com/zerotal/lock/internal/testkit/syncbuf"
)

// docsCLI is docs/CLI.md.
func docsCLI(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../docs/CLI.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// docTable is the rows of the first Markdown table under heading (the
// first cell of each, without backquotes).
func docTable(t *testing.T, doc, heading string) []string {
	t.Helper()
	_, after, ok := strings.Cut(doc, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("docs/CLI.md has no %q", heading)
	}
	var rows []string
	inTable := false
	for _, line := range strings.Split(after, "\n") {
		switch {
		case strings.HasPrefix(line, "|---"):
			inTable = true
		case inTable && strings.HasPrefix(line, "| "):
			cell, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |")
			rows = append(rows, strings.Trim(cell, "`"))
		case inTable:
			return rows
		}
	}
	return rows
}

// docs/CLI.md cannot drift from the commands: its command table names
// every command and nothing else; its exit status table is the statuses
// the commands use, and every status a command's --help lists is in it;
// every command with -o is said to speak -o json, and the JSON it
// documents for locks names every field of the API's lock object.
// (TestCLI_DocsNameEveryFlag checks the flags.)
func TestCLI_DocsMatchTheCommands(t *testing.T) {
	doc := docsCLI(t)
	var out, errb syncbuf.Buffer
	root := newRootCmd(&env{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }})
	root.InitDefaultCompletionCmd()
	root.InitDefaultHelpCmd()

	var commands []string
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() || c.Name() == "help" {
			commands = append(commands, c.Name())
		}
	}
	table := docTable(t, doc, "| Command | What it does |")
	for _, c := range commands {
		if !slices.Contains(table, c) {
			t.Errorf("docs/CLI.md's command table lacks %s", c)
		}
	}
	for _, c := range table {
		if !slices.Contains(commands, c) {
			t.Errorf("docs/CLI.md's command table names %s, which is no command", c)
		}
	}

	statuses := []int{exitOK, exitFailure, exitUsage, exitRefused, exitNoMember, exitUnavailable, exitNotAcquired,
		exitLost, exitNoPerm, exitConfig, exitCannotExec, exitNotFound, exitInterrupted}
	var documented []int
	for _, row := range docTable(t, doc, "## Exit status") {
		n, err := strconv.Atoi(row)
		if err != nil {
			t.Fatalf("docs/CLI.md's exit status table has a row %q", row)
		}
		documented = append(documented, n)
	}
	slices.Sort(statuses)
	if !slices.Equal(statuses, documented) {
		t.Errorf("docs/CLI.md's exit statuses are %v; the commands use %v", documented, statuses)
	}
	helpStatus := regexp.MustCompile(`(?m)^ {2}(\d{1,3}) {1,3}\S`)
	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		for _, m := range helpStatus.FindAllStringSubmatch(c.Annotations[annNotes], -1) {
			if n, _ := strconv.Atoi(m[1]); !slices.Contains(documented, n) {
				t.Errorf("%s --help lists exit status %d, which docs/CLI.md's table lacks", c.Name(), n)
			}
		}
		for _, sub := range c.Commands() {
			visit(sub)
		}
	}
	visit(root)

	for _, c := range root.Commands() {
		if f := c.Flags().Lookup("output"); f != nil && !strings.Contains(doc, "`"+c.Name()+" -o json`") {
			t.Errorf("%s has -o, and docs/CLI.md does not say `%s -o json`", c.Name(), c.Name())
		}
	}
	b, err := json.Marshal(api.Lock{Key: "k", Owner: "o", Holder: "h", Fence: 1, Remaining: time.Second, Waiters: 1,
		Kind: api.KindSemaphore, Limit: 2, Holders: []api.Holder{{Owner: "o", Holder: "h", Fence: 1, Remaining: time.Second, Mode: api.ModeRead}},
		Queue: []api.Waiting{{Owner: "w", Mode: api.ModeWrite}}})
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	_ = json.Unmarshal(b, &fields)
	_, schema, _ := strings.Cut(doc, "`GET /v1/locks` (")
	schema, _, _ = strings.Cut(schema, "`)")
	for f := range fields {
		if !strings.Contains(schema, `"`+f+`"`) {
			t.Errorf("docs/CLI.md's locks -o json schema lacks the field %q: %.200s", f, schema)
		}
	}
}
