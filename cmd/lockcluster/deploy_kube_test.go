package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// kubeObjects is every object of the manifest.
func kubeObjects(t *testing.T) []map[string]any {
	t.Helper()
	f, err := os.Open(kubePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var objs []map[string]any
	dec := yaml.NewDecoder(f)
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if err == io.EOF {
			return objs
		}
		if err != nil {
			t.Fatalf("%s: %v", kubePath, err)
		}
		if obj != nil {
			objs = append(objs, obj)
		}
	}
}

// at walks v by map keys and slice indices; nil where there is nothing.
func at(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			s, _ := v.([]any)
			if k >= len(s) {
				return nil
			}
			v = s[k]
		}
	}
	return v
}

// str is at(...) as a string ("" when it is none; numbers as written).
func str(v any, path ...any) string {
	switch x := at(v, path...).(type) {
	case string:
		return x
	case int:
		return strconv.Itoa(x)
	case bool:
		return strconv.FormatBool(x)
	}
	return ""
}

// kubeObject is the one object of kind (named name, when not "").
func kubeObject(t *testing.T, objs []map[string]any, kind, name string) map[string]any {
	t.Helper()
	var found []map[string]any
	for _, o := range objs {
		if str(o, "kind") == kind && (name == "" || str(o, "metadata", "name") == name) {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s: %d objects of kind %s named %q, want one", kubePath, len(found), kind, name)
	}
	return found[0]
}

// namedPorts maps the name of each port of ports to its number.
func namedPorts(ports any, field string) map[string]string {
	out := map[string]string{}
	for i := range len(asSlice(ports)) {
		out[str(ports, i, "name")] = str(ports, i, field)
	}
	return out
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

// The StatefulSet, its Services and the agent's settings agree: every
// LOCKCLUSTER_ variable is one the agent reads, the secrets come from a
// Secret, the ports are the image's everywhere, the probes ask the health
// address, and the data dir is the claimed volume.
func TestDeploy_KubernetesManifestMatchesTheAgent(t *testing.T) {
	objs := kubeObjects(t)
	sts := kubeObject(t, objs, "StatefulSet", "")
	container := at(sts, "spec", "template", "spec", "containers", 0)
	env := asSlice(at(container, "env"))
	var names []string
	vars := map[string]string{}
	for i := range env {
		name := str(env, i, "name")
		names = append(names, name)
		vars[name] = str(env, i, "value")
		if strings.Contains(name, "SECRET") || strings.Contains(name, "TOKEN") {
			if at(env, i, "valueFrom", "secretKeyRef") == nil {
				t.Errorf("StatefulSet: %s is not from a Secret", name)
			}
		}
	}
	checkAgentVars(t, "StatefulSet", names)
	script := str(container, "command", 3)
	for _, name := range names {
		if strings.HasPrefix(name, "LOCKCLUSTER_") {
			continue
		}
		used := strings.Contains(script, "$"+name) || strings.Contains(script, "${"+name)
		for _, v := range vars {
			used = used || strings.Contains(v, "$("+name+")")
		}
		if !used {
			t.Errorf("StatefulSet: %s is set and nothing uses it", name)
		}
	}

	want := expectedPorts(t)
	if got := portsOf(t, "StatefulSet", vars); got != want {
		t.Errorf("StatefulSet: the agent listens on %+v; the image on %+v", got, want)
	}
	for name, port := range map[string]string{"LOCKCLUSTER_RAFT_ADVERTISE": want.raft, "LOCKCLUSTER_HTTP_ADVERTISE": want.api} {
		if !strings.HasSuffix(vars[name], ":"+port) {
			t.Errorf("StatefulSet: %s=%q advertises another port than the agent listens on (%s)", name, vars[name], port)
		}
	}
	byName := map[string]string{"api": want.api, "raft": want.raft, "health": want.health}
	if got := namedPorts(at(container, "ports"), "containerPort"); !maps.Equal(got, byName) {
		t.Errorf("StatefulSet: container ports %v, want %v", got, byName)
	}
	headless := kubeObject(t, objs, "Service", str(sts, "spec", "serviceName"))
	if str(headless, "spec", "clusterIP") != "None" || str(headless, "spec", "publishNotReadyAddresses") != "true" {
		t.Errorf("Service %s: not headless with publishNotReadyAddresses (the members find each other before any is ready)", str(headless, "metadata", "name"))
	}
	if got := namedPorts(at(headless, "spec", "ports"), "port"); !maps.Equal(got, byName) {
		t.Errorf("Service %s: ports %v, want %v", str(headless, "metadata", "name"), got, byName)
	}
	if !strings.Contains(vars["PEER_DOMAIN"], str(headless, "metadata", "name")+".") {
		t.Errorf("StatefulSet: PEER_DOMAIN=%q is not the headless Service's domain", vars["PEER_DOMAIN"])
	}
	for _, o := range objs {
		if str(o, "kind") == "Service" && str(o, "spec", "clusterIP") != "None" {
			if got := namedPorts(at(o, "spec", "ports"), "port"); !maps.Equal(got, map[string]string{"api": want.api}) || str(o, "spec", "ports", 0, "targetPort") != "api" {
				t.Errorf("Service %s: ports %v, want the API's alone", str(o, "metadata", "name"), got)
			}
		}
	}
	if got := str(sts, "spec", "podManagementPolicy"); got != "Parallel" {
		t.Errorf("StatefulSet: podManagementPolicy %q: with OrderedReady the second pod waits for the first to be ready, which it cannot be alone", got)
	}
	for probe, path := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		if str(container, probe, "httpGet", "path") != path || str(container, probe, "httpGet", "port") != "health" {
			t.Errorf("StatefulSet: %s asks %s on port %s, want %s on health", probe,
				str(container, probe, "httpGet", "path"), str(container, probe, "httpGet", "port"), path)
		}
	}
	mounts := namedPorts(at(container, "volumeMounts"), "mountPath")
	claim := str(sts, "spec", "volumeClaimTemplates", 0, "metadata", "name")
	if mounts[claim] != vars["LOCKCLUSTER_DATA_DIR"] {
		t.Errorf("StatefulSet: the claimed volume %q is mounted at %q, the data dir is %q", claim, mounts[claim], vars["LOCKCLUSTER_DATA_DIR"])
	}
	uid, _, _ := strings.Cut(readContainerfile(t).user, ":")
	if str(sts, "spec", "template", "spec", "securityContext", "runAsUser") != uid {
		t.Errorf("StatefulSet: runAsUser %q, the image's user %q", str(sts, "spec", "template", "spec", "securityContext", "runAsUser"), uid)
	}
}

// kubeExpand expands $(NAME) in s as the kubelet does: to the value of a
// variable defined before, $$ to $, anything else left as it is written.
func kubeExpand(s string, vars map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '$' && i+1 < len(s) {
			if s[i+1] == '$' {
				b.WriteByte('$')
				i++
				continue
			}
			if end := strings.IndexByte(s[i+1:], ')'); s[i+1] == '(' && end > 0 {
				if v, ok := vars[s[i+2:i+1+end]]; ok {
					b.WriteString(v)
					i += 1 + end
					continue
				}
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// testSecrets are the values the tests give the Secret's keys.
var testSecrets = map[string]string{"raft-secret": "deploy-test-raft-secret-0123456789", "token": "deploy-test-operator-token-0123456789"}

// podEnv is the environment the kubelet gives the container of pod in
// namespace ns, and the script it runs (its command, expanded alike).
func podEnv(t *testing.T, container any, pod, ns string) (vars map[string]string, script string) {
	t.Helper()
	vars = map[string]string{}
	env := asSlice(at(container, "env"))
	for i := range env {
		name := str(env, i, "name")
		switch {
		case str(env, i, "valueFrom", "fieldRef", "fieldPath") == "metadata.name":
			vars[name] = pod
		case str(env, i, "valueFrom", "fieldRef", "fieldPath") == "metadata.namespace":
			vars[name] = ns
		case at(env, i, "valueFrom", "secretKeyRef") != nil:
			v, ok := testSecrets[str(env, i, "valueFrom", "secretKeyRef", "key")]
			if !ok {
				t.Fatalf("StatefulSet: %s is from a Secret's key the tests do not know", name)
			}
			vars[name] = v
		case at(env, i, "valueFrom") != nil:
			t.Fatalf("StatefulSet: %s is from a source the tests do not know", name)
		default:
			vars[name] = kubeExpand(str(env, i, "value"), vars)
		}
	}
	cmd := asSlice(at(container, "command"))
	if len(cmd) != 4 || str(cmd, 0) != "/bin/busybox" || str(cmd, 1) != "sh" || str(cmd, 2) != "-c" {
		t.Fatalf("StatefulSet: the command is %v, not the image's sh -c SCRIPT", cmd)
	}
	return vars, kubeExpand(str(cmd, 3), vars)
}

// startScriptRun is what a start script ran: lockcluster's arguments and
// the LOCKCLUSTER_ variables it had.
type startScriptRun struct {
	args []string
	vars map[string]string
}

// runStartScript runs script with shell and vars, with a lockcluster on
// its PATH that records how it was run instead of running.
func runStartScript(t *testing.T, shell []string, script string, vars map[string]string) startScriptRun {
	t.Helper()
	dir := t.TempDir()
	stub := "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$STUB_OUT/args\"\nenv > \"$STUB_OUT/env\"\n"
	if err := os.WriteFile(filepath.Join(dir, "lockcluster"), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, shell[0], append(shell[1:], "-c", script)...)
	cmd.Env = []string{"PATH=" + dir + ":/usr/bin:/bin", "STUB_OUT=" + dir}
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: the start script: %v\n%s", shell, err, out)
	}
	args, err := os.ReadFile(filepath.Join(dir, "args"))
	if err != nil {
		t.Fatalf("%v: the start script did not run lockcluster: %v", shell, err)
	}
	envOut, err := os.ReadFile(filepath.Join(dir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	run := startScriptRun{args: strings.Fields(string(args)), vars: map[string]string{}}
	for _, line := range strings.Split(string(envOut), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && strings.HasPrefix(k, "LOCKCLUSTER_") {
			run.vars[k] = v
		}
	}
	return run
}

// startShells are the shells the start script is run with: the system's
// sh, and busybox's, which the image has, where it is installed.
func startShells(t *testing.T) [][]string {
	shells := [][]string{{"/bin/sh"}}
	if bb, err := exec.LookPath("busybox"); err == nil {
		shells = append(shells, []string{bb, "sh"})
	} else {
		t.Log("busybox is not installed: the start script runs with /bin/sh only")
	}
	return shells
}

// The manifest's pods, scaled from three to five: the first three
// bootstrap with one list of their stable names, which names each at the
// addresses it advertises; the fourth and fifth start with no list and
// wait to be added. Each pod's settings are ones the real agent accepts.
func TestDeploy_KubernetesPodsBootstrapByOrdinal(t *testing.T) {
	sts := kubeObject(t, kubeObjects(t), "StatefulSet", "")
	container := at(sts, "spec", "template", "spec", "containers", 0)
	set := str(sts, "metadata", "name")
	replicas, _ := strconv.Atoi(str(sts, "spec", "replicas"))
	var initial int
	for i, env := 0, asSlice(at(container, "env")); i < len(env); i++ {
		if str(env, i, "name") == "INITIAL_MEMBERS" {
			initial, _ = strconv.Atoi(str(env, i, "value"))
		}
	}
	if initial != replicas || replicas < 3 {
		t.Fatalf("StatefulSet: %d replicas, INITIAL_MEMBERS %d: want the same, at least 3", replicas, initial)
	}
	const ns = "locks-test"
	var list string
	for _, shell := range startShells(t) {
		for ord := range replicas + 2 {
			pod := fmt.Sprintf("%s-%d", set, ord)
			where := fmt.Sprintf("%v, pod %s", shell, pod)
			vars, script := podEnv(t, container, pod, ns)
			run := runStartScript(t, shell, script, vars)
			checkAgentArgs(t, where, run.args)
			got := run.vars["LOCKCLUSTER_BOOTSTRAP"] // empty is unset to the agent
			if ord >= initial {
				if got != "" {
					t.Errorf("%s: scaled past the first %d, it bootstraps with %q; it must wait to be added", where, initial, got)
				}
				continue
			}
			self := pod + "=" + run.vars["LOCKCLUSTER_RAFT_ADVERTISE"] + "=" + run.vars["LOCKCLUSTER_HTTP_ADVERTISE"]
			items := splitList(got)
			if len(items) != initial || !slices.Contains(items, self) || !strings.Contains(self, "."+ns+".") {
				t.Errorf("%s: bootstraps with %q; want %d members, itself as %q", where, got, initial, self)
			}
			if list == "" {
				list = got
			} else if got != list {
				t.Errorf("%s: bootstraps with %q; %s-0 with %q", where, got, set, list)
			}
		}
	}
	// With INITIAL_MEMBERS 0 (docs/DEPLOY.md, a lost volume), no pod bootstraps.
	vars, script := podEnv(t, container, set+"-1", ns)
	vars["INITIAL_MEMBERS"] = "0"
	if got := runStartScript(t, []string{"/bin/sh"}, script, vars).vars["LOCKCLUSTER_BOOTSTRAP"]; got != "" {
		t.Errorf("INITIAL_MEMBERS=0: pod %s-1 bootstraps with %q", set, got)
	}
	// The agent's own checks, once per pod (the same settings in each shell).
	for ord := range replicas + 2 {
		pod := fmt.Sprintf("%s-%d", set, ord)
		vars, script := podEnv(t, container, pod, ns)
		acceptedByAgent(t, "pod "+pod, runStartScript(t, []string{"/bin/sh"}, script, vars).vars)
	}
}
