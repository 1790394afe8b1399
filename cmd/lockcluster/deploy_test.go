package main

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/zerotal/lock/cmd/lockcluster/internal/cliflags"
	"github.com/zerotal/lock/internal/testkit/syncbuf"
)

// The recipes of deploy/ (docs/DEPLOY.md) start lockcluster agent with its
// settings in LOCKCLUSTER_ variables. These tests keep them true to the
// agent: every variable they set is one it reads, their ports agree, and
// the settings each recipe gives a node are ones the real agent accepts.

const (
	containerfilePath = "../../deploy/Containerfile"
	unitPath          = "../../deploy/systemd/lockcluster.service"
	unitEnvPath       = "../../deploy/systemd/lockcluster.env"
	kubePath          = "../../deploy/kubernetes/lockcluster.yaml"
	deployDocPath     = "../../docs/DEPLOY.md"
)

// agentVars maps each variable lockcluster agent reads to its flag.
func agentVars(t *testing.T) map[string]string {
	t.Helper()
	agent, _ := findCommand(t, "agent")
	vars := map[string]string{}
	agent.Flags().VisitAll(func(f *pflag.Flag) {
		if name, ok := strings.CutPrefix(cliflags.EnvNote(agent, f), "env "); ok {
			vars[name] = f.Name
		}
	})
	if len(vars) == 0 {
		t.Fatal("lockcluster agent reads no variable")
	}
	return vars
}

// checkAgentVars fails t for each LOCKCLUSTER_ variable of names that the
// agent does not read: a recipe's typo would be ignored in silence.
func checkAgentVars(t *testing.T, where string, names []string) {
	t.Helper()
	known := agentVars(t)
	for _, name := range names {
		if strings.HasPrefix(name, "LOCKCLUSTER_") && known[name] == "" {
			t.Errorf("%s sets %s, which lockcluster agent does not read", where, name)
		}
	}
}

// checkAgentArgs fails t unless args run lockcluster agent with flags it
// defines.
func checkAgentArgs(t *testing.T, where string, args []string) {
	t.Helper()
	if len(args) == 0 || args[0] != "agent" {
		t.Errorf("%s runs lockcluster %q, not agent", where, args)
		return
	}
	agent, _ := findCommand(t, "agent")
	if err := agent.ParseFlags(args[1:]); err != nil {
		t.Errorf("%s: lockcluster %s: %v", where, strings.Join(args, " "), err)
	}
}

// recipePorts are the ports a recipe gives the agent.
type recipePorts struct{ api, raft, health string }

// portsOf reads the ports of the agent's listening addresses in vars.
func portsOf(t *testing.T, where string, vars map[string]string) recipePorts {
	t.Helper()
	port := func(name string) string {
		_, p, err := net.SplitHostPort(vars[name])
		if err != nil {
			t.Errorf("%s: %s=%q: %v", where, name, vars[name], err)
		}
		return p
	}
	return recipePorts{api: port("LOCKCLUSTER_HTTP_ADDR"), raft: port("LOCKCLUSTER_RAFT_ADDR"), health: port("LOCKCLUSTER_HEALTH_ADDR")}
}

// acceptedByAgent runs lockcluster agent in this process with vars, its
// data dir in a temporary directory and its HTTP address a port this test
// holds, and fails t unless the agent accepted the settings: NewNode
// checks its Config first and listens on the HTTP address before raft
// starts, so failing there, and only there, means every check passed.
func acceptedByAgent(t *testing.T, where string, vars map[string]string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	vars = cloneVars(vars)
	vars["LOCKCLUSTER_DATA_DIR"] = t.TempDir()
	vars["LOCKCLUSTER_HTTP_ADDR"] = ln.Addr().String()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var out, errb syncbuf.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb,
		getenv: func(k string) string { return vars[k] }, self: "lockcluster"}
	code := dispatch(ctx, e, []string{"agent"})
	if want := "listen HTTP on " + ln.Addr().String(); code != exitFailure || !strings.Contains(errb.String(), want) {
		t.Errorf("%s: lockcluster agent refused the settings (exit status %d; want %d at %q):\n%s",
			where, code, exitFailure, want, errb.String())
	}
}

func cloneVars(vars map[string]string) map[string]string {
	out := make(map[string]string, len(vars))
	maps.Copy(out, vars)
	return out
}

// findCommand is the command of lockcluster's real command tree that args
// name, and the arguments after its name.
func findCommand(t *testing.T, args ...string) (*cobra.Command, []string) {
	t.Helper()
	root := newRootCmd(&env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard,
		getenv: func(string) string { return "" }, self: "lockcluster"})
	cmd, rest, err := root.Find(args)
	if err != nil || cmd == root {
		t.Fatalf("lockcluster has no command %q: %v", args, err)
	}
	return cmd, rest
}

// containerfile is what the tests read of deploy/Containerfile's last
// stage (the image), and the go build of its source stage.
type containerfile struct {
	env         map[string]string
	expose      []string // ports, without /tcp
	volumes     []string
	user        string
	entrypoint  []string
	cmd         []string
	healthcheck []string
	goBuild     string
}

// readContainerfile parses deploy/Containerfile: its instructions, with
// line continuations joined and comments dropped.
func readContainerfile(t *testing.T) containerfile {
	t.Helper()
	b, err := os.ReadFile(containerfilePath)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	cur := ""
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if s, ok := strings.CutSuffix(line, "\\"); ok {
			cur += s + " "
			continue
		}
		if cur += line; strings.TrimSpace(cur) != "" {
			lines = append(lines, strings.TrimSpace(cur))
		}
		cur = ""
	}
	jsonArgs := func(s string) []string {
		var v []string
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Errorf("Containerfile: %q is not a JSON array: %v", s, err)
		}
		return v
	}
	var c containerfile
	for _, line := range lines {
		op, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(op) {
		case "FROM": // a new stage: the image is the last one's
			c = containerfile{goBuild: c.goBuild, env: map[string]string{}}
		case "RUN":
			if strings.Contains(rest, "go build") {
				c.goBuild = rest
			}
		case "ENV":
			for _, kv := range strings.Fields(rest) {
				k, v, _ := strings.Cut(kv, "=")
				c.env[k] = v
			}
		case "EXPOSE":
			for _, p := range strings.Fields(rest) {
				c.expose = append(c.expose, strings.TrimSuffix(p, "/tcp"))
			}
		case "VOLUME":
			c.volumes = append(c.volumes, strings.Fields(rest)...)
		case "USER":
			c.user = rest
		case "ENTRYPOINT":
			c.entrypoint = jsonArgs(rest)
		case "CMD":
			c.cmd = jsonArgs(rest)
		case "HEALTHCHECK":
			_, probe, ok := strings.Cut(rest, " CMD ")
			if !ok {
				t.Errorf("Containerfile: HEALTHCHECK %s has no CMD", rest)
			}
			c.healthcheck = jsonArgs(probe)
		}
	}
	return c
}

// The image: a static binary, a numeric user other than root, the data dir
// a volume, the ports its settings name exposed, its health check on the
// health address, and nothing set the agent does not read.
func TestDeploy_ContainerfileMatchesTheAgent(t *testing.T) {
	c := readContainerfile(t)
	if !strings.Contains(c.goBuild, "CGO_ENABLED=0") {
		t.Errorf("Containerfile: the go build is not static (no CGO_ENABLED=0): %q", c.goBuild)
	}
	uid, _, _ := strings.Cut(c.user, ":")
	if !regexp.MustCompile(`^[1-9][0-9]*$`).MatchString(uid) {
		t.Errorf("Containerfile: USER %q is not a numeric user other than root", c.user)
	}
	checkAgentVars(t, "Containerfile", slices.Sorted(maps.Keys(c.env)))
	if !slices.Equal(c.volumes, []string{c.env["LOCKCLUSTER_DATA_DIR"]}) {
		t.Errorf("Containerfile: VOLUME %q, LOCKCLUSTER_DATA_DIR %q: the data dir must be the volume", c.volumes, c.env["LOCKCLUSTER_DATA_DIR"])
	}
	p := portsOf(t, "Containerfile", c.env)
	if !slices.Equal(slices.Sorted(slices.Values(c.expose)), slices.Sorted(slices.Values([]string{p.api, p.raft, p.health}))) {
		t.Errorf("Containerfile: EXPOSE %q; its addresses listen on %+v", c.expose, p)
	}
	if want := "http://127.0.0.1:" + p.health + "/healthz"; !slices.Contains(c.healthcheck, want) {
		t.Errorf("Containerfile: HEALTHCHECK %q does not ask %s", c.healthcheck, want)
	}
	if len(c.entrypoint) != 1 || !strings.HasSuffix(c.entrypoint[0], "/lockcluster") {
		t.Errorf("Containerfile: ENTRYPOINT %q is not the lockcluster binary", c.entrypoint)
	}
	checkAgentArgs(t, "Containerfile's CMD", c.cmd)
}

// expectedPorts are the image's: every recipe uses the same.
func expectedPorts(t *testing.T) recipePorts {
	t.Helper()
	return portsOf(t, "Containerfile", readContainerfile(t).env)
}

// shellWords splits a command line as sh does for these docs: words
// separated by blanks, quotes kept together and removed, a # that starts a
// word ending the line. (No expansion: $(...) stays a word.)
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	inWord, quote := false, byte(0)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
			}
			inWord = false
		case c == '#' && !inWord:
			i = len(line)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// docCommands are the lockcluster command lines of doc's shell blocks:
// a line that starts with lockcluster, or runs it after "--" (kubectl exec).
func docCommands(doc string) [][]string {
	var cmds [][]string
	inBlock, cur := false, ""
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock && strings.TrimPrefix(line, "```") == "sh"
			continue
		}
		if !inBlock {
			continue
		}
		if s, ok := strings.CutSuffix(line, "\\"); ok {
			cur += s + " "
			continue
		}
		words := shellWords(cur + line)
		cur = ""
		for i, w := range words {
			if w == "lockcluster" && (i == 0 || words[i-1] == "--") {
				cmds = append(cmds, words[i+1:])
				break
			}
		}
	}
	return cmds
}

// Every lockcluster command line docs/DEPLOY.md shows is a command
// lockcluster has, with flags that command defines, and every LOCKCLUSTER_
// variable it names is one the agent reads.
func TestDeploy_DocCommandsParse(t *testing.T) {
	b, err := os.ReadFile(deployDocPath)
	if err != nil {
		t.Fatal(err)
	}
	checkAgentVars(t, deployDocPath, regexp.MustCompile(`LOCKCLUSTER_[A-Z_]*[A-Z]`).FindAllString(string(b), -1))
	cmds := docCommands(string(b))
	if len(cmds) < 5 {
		t.Fatalf("%s shows %d lockcluster commands; the scale-up flow alone has more", deployDocPath, len(cmds))
	}
	for _, args := range cmds {
		cmd, rest := findCommand(t, args...)
		if err := cmd.ParseFlags(rest); err != nil {
			t.Errorf("%s: lockcluster %s: %v", deployDocPath, strings.Join(args, " "), err)
		}
	}
}
