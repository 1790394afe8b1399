package lock_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers/memory"
	"github.com/zerotal/lock/internal/loopback"
	"github.com/zerotal/lock/internal/testkit/realbackends"
)

const secret = "s3cr3t-pass"

// clearEnv unsets every variable ConfigFromEnv reads, for the test.
func clearEnv(t *testing.T) {
	for _, v := range []string{lock.EnvDriver, lock.EnvPrefix, lock.EnvSQLitePath, lock.EnvSQLiteDurable, lock.EnvRedisURL, lock.EnvEndpoints,
		lock.EnvToken, lock.EnvTLSCA, lock.EnvTLSCert, lock.EnvTLSKey, lock.EnvClusterID, lock.EnvPostgresURL, lock.EnvDatabaseURL} {
		t.Setenv(v, "")
	}
}

func TestConfigFromEnv(t *testing.T) {
	clearEnv(t)
	t.Setenv("LOCKCLUSTER_DRIVER", "cluster")
	t.Setenv("LOCKCLUSTER_PREFIX", "app:")
	t.Setenv("LOCKCLUSTER_SQLITE_PATH", "/tmp/locks.db")
	t.Setenv("REDIS_URL", "redis://user:"+secret+"@127.0.0.1:6379/2")
	t.Setenv("LOCKCLUSTER_ENDPOINTS", " 127.0.0.1:7001, ,127.0.0.1:7002,")
	t.Setenv("LOCKCLUSTER_TOKEN", secret)
	cfg, err := lock.ConfigFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	want := lock.Config{
		Driver:  "cluster",
		Prefix:  "app:",
		SQLite:  lock.SQLiteConfig{Path: "/tmp/locks.db"},
		Redis:   lock.RedisConfig{URL: "redis://user:" + secret + "@127.0.0.1:6379/2"},
		Cluster: lock.ClusterConfig{Addrs: []string{"127.0.0.1:7001", "127.0.0.1:7002"}, Token: secret},
	}
	if cfg.Driver != want.Driver || cfg.Prefix != want.Prefix || cfg.SQLite != want.SQLite || cfg.Redis != want.Redis ||
		!slices.Equal(cfg.Cluster.Addrs, want.Cluster.Addrs) || cfg.Cluster.Token != want.Cluster.Token {
		t.Fatalf("ConfigFromEnv = %v, want %v", cfg, want)
	}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		if s := fmt.Sprintf(format, cfg); strings.Contains(s, secret) {
			t.Errorf("%s of the config prints a secret: %s", format, s)
		}
	}
	if s := fmt.Sprintf("%v %#v", cfg.Redis, cfg.Cluster); strings.Contains(s, secret) {
		t.Errorf("sub-configs print a secret: %s", s)
	}
}

// Only the LOCKCLUSTER_ family (and REDIS_URL) is read: variables of
// other names, such as LOCK_DRIVER, configure nothing.
func TestConfigFromEnv_ReadsOnlyItsOwnFamily(t *testing.T) {
	clearEnv(t)
	for k, v := range map[string]string{
		"LOCK_DRIVER": "sqlite", "LOCK_PREFIX": "other:", "LOCK_SQLITE_PATH": "/tmp/other.db",
		"LOCK_CLUSTER_ADDRS": "127.0.0.1:7001", "LOCK_CLUSTER_TOKEN": secret,
	} {
		t.Setenv(k, v)
	}
	cfg, err := lock.ConfigFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Driver != "memory" && cfg.Driver != "" || cfg.Prefix != "" || cfg.SQLite.Path != "" ||
		len(cfg.Cluster.Addrs) != 0 || cfg.Cluster.Token != "" {
		t.Fatalf("variables outside the family configured %v", cfg)
	}
}

func TestConfigFromEnv_UnsetMeansDefaults(t *testing.T) {
	clearEnv(t)
	cfg, err := lock.ConfigFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Driver != "" || cfg.Prefix != "" || len(cfg.Cluster.Addrs) != 0 {
		t.Fatalf("defaults were written into the config: %v", cfg)
	}
	m := realbackends.Open(t, cfg)
	if _, ok := m.Driver().(*memory.Driver); !ok || m.Prefix() != lock.DefaultPrefix {
		t.Errorf("defaults: driver %T prefix %q", m.Driver(), m.Prefix())
	}
}

// A process given the cluster's addresses but no LOCKCLUSTER_DRIVER must
// use the cluster, not quietly lock in its own memory where nobody else
// sees it.
func TestConfigFromEnv_ClusterAddrsAloneSelectTheCluster(t *testing.T) {
	clearEnv(t)
	t.Setenv("LOCKCLUSTER_ENDPOINTS", "127.0.0.1:7001,127.0.0.1:7002")
	cfg, err := lock.ConfigFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Driver != "cluster" {
		t.Fatalf("LOCKCLUSTER_ENDPOINTS without LOCKCLUSTER_DRIVER gives driver %q, want cluster", cfg.Driver)
	}
	// Open goes to the cluster: nobody listens there, and it says so
	// rather than locking in memory.
	t.Setenv("LOCKCLUSTER_ENDPOINTS", loopback.MustFreeAddr(t))
	if cfg, err = lock.ConfigFromEnv(); err != nil {
		t.Fatal(err)
	}
	m, err := lock.Open(t.Context(), cfg)
	if m != nil || !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("Open of a cluster nobody runs = %v, %v; want ErrUnavailable", m, err)
	}

	// An explicit LOCKCLUSTER_DRIVER still wins.
	t.Setenv("LOCKCLUSTER_DRIVER", "memory")
	if cfg, err := lock.ConfigFromEnv(); err != nil || cfg.Driver != "memory" {
		t.Fatalf("LOCKCLUSTER_DRIVER=memory: driver %q, err %v", cfg.Driver, err)
	}
}

// Each shared backend's variable alone selects that backend: a process
// given only a database file or a Redis URL must not lock in its own
// memory, where two processes would both hold one key with fence 1.
func TestConfigFromEnv_OneBackendVariableSelectsItsBackend(t *testing.T) {
	for _, c := range []struct{ env, value, driver string }{
		{"LOCKCLUSTER_SQLITE_PATH", "/var/lib/app/locks.db", "sqlite"},
		{"REDIS_URL", "redis://127.0.0.1:6379/0", "redis"},
		{"LOCKCLUSTER_ENDPOINTS", "127.0.0.1:7001", "cluster"},
	} {
		clearEnv(t)
		t.Setenv(c.env, c.value)
		cfg, err := lock.ConfigFromEnv()
		if err != nil || cfg.Driver != c.driver {
			t.Errorf("%s alone: driver %q, err %v; want %s", c.env, cfg.Driver, err, c.driver)
		}
	}
}

// Two backends' variables and no LOCKCLUSTER_DRIVER: nothing says which to
// lock on, so ConfigFromEnv refuses, naming the variables, and returns
// nothing usable.
func TestConfigFromEnv_TwoBackendsWithoutADriverAreRefused(t *testing.T) {
	clearEnv(t)
	t.Setenv("REDIS_URL", "redis://:"+secret+"@127.0.0.1:6379/0")
	t.Setenv("LOCKCLUSTER_SQLITE_PATH", "/var/lib/app/locks.db")
	cfg, err := lock.ConfigFromEnv()
	var inv *lock.InvalidError
	if !errors.As(err, &inv) || inv.Field != lock.EnvDriver {
		t.Fatalf("ConfigFromEnv = %v, %v; want an invalid %s", cfg, err, lock.EnvDriver)
	}
	for _, name := range []string{"REDIS_URL", "LOCKCLUSTER_SQLITE_PATH"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("the error does not name %s: %v", name, err)
		}
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("the error prints the password: %v", err)
	}
	if cfg.Driver != "" || cfg.Redis.URL != "" || cfg.SQLite.Path != "" {
		t.Errorf("a failed ConfigFromEnv returned a usable Config: %v", cfg)
	}
	t.Setenv("LOCKCLUSTER_DRIVER", "sqlite")
	if cfg, err := lock.ConfigFromEnv(); err != nil || cfg.Driver != "sqlite" {
		t.Errorf("with LOCKCLUSTER_DRIVER=sqlite: %v, %v", cfg.Driver, err)
	}
}

// LOCKCLUSTER_SQLITE_DURABLE reaches SQLiteConfig.Durable; a value that is
// not a boolean is refused by name.
func TestConfigFromEnv_SQLiteDurable(t *testing.T) {
	clearEnv(t)
	t.Setenv("LOCKCLUSTER_SQLITE_PATH", "/var/lib/app/locks.db")
	t.Setenv("LOCKCLUSTER_SQLITE_DURABLE", "true")
	if cfg, err := lock.ConfigFromEnv(); err != nil || !cfg.SQLite.Durable {
		t.Errorf("LOCKCLUSTER_SQLITE_DURABLE=true: %v, %v", cfg, err)
	}
	t.Setenv("LOCKCLUSTER_SQLITE_DURABLE", "yes please")
	cfg, err := lock.ConfigFromEnv()
	if inv, ok := errors.AsType[*lock.InvalidError](err); !ok || inv.Field != lock.EnvSQLiteDurable || cfg.Driver != "" {
		t.Errorf("LOCKCLUSTER_SQLITE_DURABLE=\"yes please\": %v, %v; want an invalid %s", cfg, err, lock.EnvSQLiteDurable)
	}
}

func TestConfigFromEnv_Invalid(t *testing.T) {
	clearEnv(t)
	t.Setenv("LOCKCLUSTER_DRIVER", "redis")
	t.Setenv("REDIS_URL", "http://:"+secret+"@host")
	_, err := lock.ConfigFromEnv()
	if !errors.Is(err, lock.ErrInvalid) {
		t.Fatalf("ConfigFromEnv = %v, want ErrInvalid", err)
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("error prints the password: %v", err)
	}
}

func TestConfig_Validate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		cfg   lock.Config
		field string // "" = valid
	}{
		{"zero value", lock.Config{}, ""},
		{"sqlite in memory, written out", lock.Config{Driver: "sqlite", SQLite: lock.SQLiteConfig{Path: ":memory:"}}, ""},
		{"sqlite without a path", lock.Config{Driver: "sqlite"}, "SQLite.Path"},
		{"redis", lock.Config{Driver: "redis", Redis: lock.RedisConfig{URL: "rediss://:" + secret + "@127.0.0.1:6380/1"}}, ""},
		{"cluster", lock.Config{Driver: "cluster", Cluster: lock.ClusterConfig{Addrs: []string{"127.0.0.1:7001"}}}, ""},
		{"unknown driver", lock.Config{Driver: "etcd"}, "Driver"},
		{"prefix not UTF-8", lock.Config{Prefix: "\xff"}, "Prefix"},
		{"prefix too long", lock.Config{Prefix: strings.Repeat("p", 1024)}, "Prefix"},
		{"redis without URL", lock.Config{Driver: "redis"}, "Redis.URL"},
		{"redis URL unparseable", lock.Config{Driver: "redis", Redis: lock.RedisConfig{URL: "redis://:" + secret + "@[::1"}}, "Redis.URL"},
		{"redis URL wrong scheme", lock.Config{Driver: "redis", Redis: lock.RedisConfig{URL: "http://:" + secret + "@h:1"}}, "Redis.URL"},
		{"redis URL no host", lock.Config{Driver: "redis", Redis: lock.RedisConfig{URL: "redis://"}}, "Redis.URL"},
		{"cluster without addrs", lock.Config{Driver: "cluster", Cluster: lock.ClusterConfig{Token: secret}}, "Cluster.Addrs"},
		{"cluster blank addr", lock.Config{Driver: "cluster", Cluster: lock.ClusterConfig{Addrs: []string{""}}}, "Cluster.Addrs"},
		{"sqlite NUL path", lock.Config{Driver: "sqlite", SQLite: lock.SQLiteConfig{Path: "a\x00b"}}, "SQLite.Path"},
	}
	for _, c := range cases {
		err := c.cfg.Validate()
		if c.field == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		var inv *lock.InvalidError
		if !errors.As(err, &inv) || inv.Field != c.field {
			t.Errorf("%s: Validate = %v, want an invalid %s", c.name, err, c.field)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: error prints a secret: %v", c.name, err)
		}
	}
}

func TestConfig_UnknownDriverListsValidOnes(t *testing.T) {
	t.Parallel()
	_, err := lock.Open(t.Context(), lock.Config{Driver: "zookeeper"})
	if !errors.Is(err, lock.ErrInvalid) {
		t.Fatalf("Open = %v, want ErrInvalid", err)
	}
	for _, name := range []string{"zookeeper", "memory", "sqlite", "redis", "cluster"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not mention %q", err, name)
		}
	}
}

func TestOpen_Memory(t *testing.T) {
	t.Parallel()
	cfg := lock.Config{Prefix: "test:"}
	m := realbackends.Open(t, cfg)
	if cfg.Driver != "" || cfg.SQLite.Path != "" {
		t.Error("Open wrote defaults into the caller's config")
	}
	if m.Prefix() != "test:" {
		t.Errorf("prefix %q", m.Prefix())
	}
	if err := m.Try(t.Context(), "k", time.Second, noop); err != nil {
		t.Fatal(err)
	}
}

func TestOpen_InvalidConfigOpensNothing(t *testing.T) {
	t.Parallel()
	m, err := lock.Open(t.Context(), lock.Config{Driver: "redis", Redis: lock.RedisConfig{URL: "ftp://u:" + secret + "@h"}})
	if m != nil || !errors.Is(err, lock.ErrInvalid) {
		t.Fatalf("Open = %v, %v", m, err)
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("error prints the password: %v", err)
	}
}

// A cluster address the client cannot use is a configuration mistake (exit
// status 64 in the CLI), not an unreachable cluster, and its credentials
// are never printed.
func TestOpen_BadClusterAddressIsInvalid(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"ftp://127.0.0.1:7001", "http://u:" + secret + "@127.0.0.1:7001", "http://"} {
		m, err := lock.Open(t.Context(), lock.Config{Driver: "cluster", Cluster: lock.ClusterConfig{Addrs: []string{addr}}})
		if m != nil || !errors.Is(err, lock.ErrInvalid) {
			t.Fatalf("Open with cluster address %q = %v, %v; want ErrInvalid", addr, m, err)
		}
		if errors.Is(err, lock.ErrUnavailable) {
			t.Fatalf("Open with cluster address %q: %v also matches ErrUnavailable", addr, err)
		}
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("error prints the password: %v", err)
		}
	}
}

func TestConfig_RedactsEveryFormOfSecret(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		"redis://:" + secret + "@127.0.0.1:6379/0",
		"redis://" + secret + "@127.0.0.1:6379",
		"rediss://user:" + secret + "@127.0.0.1:6380/?password=" + secret,
		"redis://127.0.0.1:6379/?password=" + secret,
		"redis://:" + secret + "@[::1",
	} {
		cfg := lock.Config{Driver: "redis", Redis: lock.RedisConfig{URL: raw}}
		for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%#v", cfg), fmt.Sprintf("%#v", cfg.Redis), cfg.Redis.String()} {
			if strings.Contains(s, secret) {
				t.Errorf("printed a secret: %s", s)
			}
		}
	}
	if s := fmt.Sprintf("%v", lock.RedisConfig{URL: "redis://127.0.0.1:6379/1"}); !strings.Contains(s, "127.0.0.1:6379/1") {
		t.Errorf("a URL without secrets should print as is: %s", s)
	}
}
