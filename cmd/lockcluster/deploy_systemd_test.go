package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/cluster/access"
)

// unitFile is a systemd unit's settings: "Section.Key" to its values, in
// the order written.
type unitFile map[string][]string

func readUnit(t *testing.T) (unitFile, string) {
	t.Helper()
	b, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	u, section := unitFile{}, ""
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "["):
			section = strings.Trim(line, "[]")
		default:
			k, v, _ := strings.Cut(line, "=")
			u[section+"."+k] = append(u[section+"."+k], v)
		}
	}
	return u, string(b)
}

// readEnvFile reads KEY=VALUE lines, as systemd's EnvironmentFile= does
// for these (no quotes, no continuations).
func readEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.ContainsAny(v, `"'\`) {
			t.Errorf("%s: %q is not KEY=VALUE with a plain value", path, line)
		}
		vars[k] = v
	}
	return vars
}

// The unit passes systemd-analyze verify (with ExecStart pointed at an
// executable that exists, as verify asks): no error and no warning about
// it, which verify prints with exit status 0 for an unknown key or a bad value.
func TestDeploy_SystemdUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze is not installed (Debian: apt-get install systemd; scripts/test-deps.sh installs it): it checks deploy/systemd/lockcluster.service")
	}
	u, text := readUnit(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "lockcluster")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	start := u["Service.ExecStart"]
	if len(start) != 1 {
		t.Fatalf("%s: ExecStart %q, want one", unitPath, start)
	}
	exe, _, _ := strings.Cut(start[0], " ")
	unit := filepath.Join(dir, "lockcluster.service")
	if err := os.WriteFile(unit, []byte(strings.Replace(text, "ExecStart="+exe, "ExecStart="+bin, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, analyze, "verify", unit).CombinedOutput()
	var about []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "lockcluster") {
			about = append(about, line)
		} else if line != "" {
			t.Logf("systemd-analyze verify, of another unit: %s", line)
		}
	}
	if err != nil || len(about) > 0 {
		t.Errorf("systemd-analyze verify %s (exit: %v):\n%s", unitPath, err, strings.Join(about, "\n"))
	}
}

// The unit runs lockcluster agent with no flag: the settings are the
// unit's Environment= and its EnvironmentFile (the example), every one a
// variable the agent reads, on the image's ports, and the agent accepts
// them with the unit's data dir and credentials in place.
func TestDeploy_SystemdUnitStartsTheAgent(t *testing.T) {
	u, _ := readUnit(t)
	start := strings.Fields(strings.Join(u["Service.ExecStart"], " "))
	if len(start) == 0 || start[0] != "/usr/local/bin/lockcluster" {
		t.Fatalf("%s: ExecStart %q, not /usr/local/bin/lockcluster (docs/DEPLOY.md installs it there)", unitPath, start)
	}
	checkAgentArgs(t, unitPath, start[1:])
	if got := u["Service.EnvironmentFile"]; len(got) != 1 || strings.TrimPrefix(got[0], "-") != "/etc/lockcluster/lockcluster.env" {
		t.Errorf("%s: EnvironmentFile %q, not the example's place, /etc/lockcluster/lockcluster.env", unitPath, got)
	}

	// systemd's specifiers: %S the state directories' root, %d the
	// credentials' directory, where LoadCredential= copies each file.
	state, creds := t.TempDir(), t.TempDir()
	files := map[string]string{
		"raft-secret": testSecrets["raft-secret"] + "\n",
		"tokens":      "ops operator * sha256:" + access.HashToken(testSecrets["token"]) + "\n",
	}
	for _, c := range u["Service.LoadCredential"] {
		name, _, _ := strings.Cut(c, ":")
		content, ok := files[name]
		if !ok {
			t.Fatalf("%s: LoadCredential %q: the test has no file for it", unitPath, c)
		}
		if err := os.WriteFile(filepath.Join(creds, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	vars := map[string]string{}
	for _, e := range u["Service.Environment"] {
		for _, kv := range strings.Fields(e) {
			k, v, _ := strings.Cut(kv, "=")
			vars[k] = strings.NewReplacer("%S", state, "%d", creds).Replace(v)
		}
	}
	if want := filepath.Join(state, strings.Join(u["Service.StateDirectory"], "")); vars["LOCKCLUSTER_DATA_DIR"] != want {
		t.Errorf("%s: LOCKCLUSTER_DATA_DIR is %q, not the StateDirectory %q", unitPath, vars["LOCKCLUSTER_DATA_DIR"], want)
	}
	example := readEnvFile(t, unitEnvPath)
	for k, v := range example { // EnvironmentFile= wins over Environment=
		vars[k] = v
	}
	var names []string
	for k := range vars {
		names = append(names, k)
	}
	checkAgentVars(t, unitPath+" and "+unitEnvPath, names)
	if got, want := portsOf(t, unitEnvPath, vars), expectedPorts(t); got != want {
		t.Errorf("%s: the agent listens on %+v; the image on %+v", unitEnvPath, got, want)
	}
	acceptedByAgent(t, unitPath, vars)
}
