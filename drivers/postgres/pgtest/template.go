package pgtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// A database cluster made by initdb once per machine and version of
// initdb, which Start copies: initdb costs about a second a server, half
// of it CPU, and a copy a tenth of that, with a package starting a
// server a test. It is kept in the temporary directory as a cache: made
// in a directory of its own and renamed into place, so that it is there
// whole or not at all, whichever of several processes makes it first.
var templates struct {
	mu   sync.Mutex
	data map[string]string // by initdb's path: the template's data directory
}

// templateData returns the data directory of the template of initdb,
// making it first if need be.
func templateData(initdb string) (string, error) {
	templates.mu.Lock()
	defer templates.mu.Unlock()
	if d, ok := templates.data[initdb]; ok {
		return d, nil
	}
	st, err := os.Stat(initdb)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(initdb + "\x00" + strconv.FormatInt(st.Size(), 10) + "\x00" +
		st.ModTime().String() + "\x00" + strconv.Itoa(os.Geteuid())))
	root := filepath.Join(os.TempDir(), "zerotal-pgtest")
	dir := filepath.Join(root, hex.EncodeToString(sum[:8]))
	data := filepath.Join(dir, "data")
	if !isFile(filepath.Join(data, "PG_VERSION")) {
		if err := makeTemplate(initdb, root, dir); err != nil {
			return "", err
		}
	}
	if templates.data == nil {
		templates.data = map[string]string{}
	}
	templates.data[initdb] = data
	return data, nil
}

// makeTemplate runs initdb in a new directory beside dir and renames it
// to dir; a dir another process made first is kept.
func makeTemplate(initdb, root, dir string) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(root, filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	// The servers' user copies the template: it must read it.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if c := unprivileged(); c != nil {
		if err := os.Chown(tmp, int(c.Uid), int(c.Gid)); err != nil {
			return err
		}
	}
	out, err := command(initdb, "-D", filepath.Join(tmp, "data"), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync").CombinedOutput()
	if err != nil {
		return fmt.Errorf("initdb: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, dir); err != nil && !isFile(filepath.Join(dir, "data", "PG_VERSION")) {
		return err
	}
	return nil
}

// initData makes the database cluster data, a copy of the template.
func initData(initdb, data string) error {
	tmpl, err := templateData(initdb)
	if err != nil {
		return err
	}
	if out, err := command("cp", "-R", "-p", tmpl, data).CombinedOutput(); err != nil {
		return fmt.Errorf("copy the template %s: %v\n%s", tmpl, err, out)
	}
	return nil
}
