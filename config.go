package lock

import (
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/zerotal/lock/drivers"
)

// DefaultDriver is the driver of a Config that names none.
const DefaultDriver = "memory"

// Config selects and configures the backend for Open. The zero value is
// valid: the in-process memory driver with DefaultPrefix.
//
// The backend is chosen here, once. Never fall back from one backend to
// another at run time: two processes holding one key on two backends would
// both believe they are alone.
type Config struct {
	// Driver is "memory" (default; one process), "sqlite" (every process
	// on one host), "redis", "postgres" or "cluster" (many hosts). Every
	// driver but memory is linked into the program by importing its
	// package for its side effect: import _ "github.com/zerotal/lock/drivers/sqlite"
	// (or drivers/redis, drivers/postgres, drivers/cluster).
	Driver string
	// Prefix is prepended to every key. Empty means the driver's default:
	// none on "cluster", whose HTTP API and lockcluster commands name keys
	// as written, and DefaultPrefix elsewhere. (A Manager without any
	// prefix is built with New and WithPrefix("").)
	Prefix string
	// SQLite configures the "sqlite" driver.
	SQLite SQLiteConfig
	// Redis configures the "redis" driver.
	Redis RedisConfig
	// Postgres configures the "postgres" driver.
	Postgres PostgresConfig
	// Cluster configures the "cluster" driver.
	Cluster ClusterConfig
	// Logger receives the Manager's and the driver's logs; nil discards them.
	Logger *slog.Logger
	// Holder is how this process's grants describe their holder to others
	// (see WithHolder: one word of visible characters, at most
	// MaxHolderLen bytes); empty means the process id and the host name.
	Holder string

	// err is why ConfigFromEnv could not build a Config. The Config it
	// returns with an error carries it, so that Validate and Open return
	// it: the zero Config, which is otherwise valid, would open the
	// memory driver, and a program that dropped the error would take
	// locks no other process sees.
	err error
}

// SQLiteConfig configures the "sqlite" driver.
type SQLiteConfig struct {
	// Path is the database file, which every process that shares the locks
	// opens (local file systems only: all processes must share one clock).
	// It is required: ":memory:", written out, is a database private to
	// this one handle, which no other Manager, in this process or another,
	// sees.
	Path string
	// Durable makes every commit wait until it is on disk, so that grants
	// and the fence counter survive an OS crash or a power cut as well as a
	// process crash, for an fsync per commit (see sqlite.Config.Durable).
	Durable bool
}

// RedisConfig configures the "redis" driver.
type RedisConfig struct {
	// URL is redis://[user:password@]host:port[/db] or rediss:// for TLS.
	// It may hold a password, so it is redacted whenever it is printed.
	URL string
}

// String prints the configuration with the URL's password redacted.
func (c RedisConfig) String() string { return fmt.Sprintf("{URL:%s}", redactURL(c.URL)) }

// GoString is String, so that %#v does not print the password either.
func (c RedisConfig) GoString() string { return "lock.RedisConfig" + c.String() }

// PostgresConfig configures the "postgres" driver.
type PostgresConfig struct {
	// URL is postgres://[user[:password]@]host[:port]/database[?...] or a
	// "key=value ..." connection string, directly or through a pooler in
	// transaction mode. It may hold a password, so it is redacted
	// whenever it is printed.
	URL string
}

// String prints the configuration with the password redacted.
func (c PostgresConfig) String() string {
	if c.URL != "" && !strings.Contains(c.URL, "://") {
		return "{URL:<connection string, redacted>}"
	}
	return fmt.Sprintf("{URL:%s}", redactURL(c.URL))
}

// GoString is String, so that %#v does not print the password either.
func (c PostgresConfig) GoString() string { return "lock.PostgresConfig" + c.String() }

// ClusterConfig configures the "cluster" driver, a client of lockcluster
// nodes.
type ClusterConfig struct {
	// Addrs are the HTTP addresses of the nodes (host:port or URLs); any
	// node will do, requests reach the leader.
	Addrs []string
	// Token is the bearer token the nodes require, if any. It is never
	// printed.
	Token string
	// CAFile is a PEM file of the CA that signs the nodes' certificates
	// (TLS clusters). Setting it, or CertFile, makes a bare host:port in
	// Addrs mean https.
	CAFile string
	// CertFile and KeyFile are a PEM client certificate and its key, for
	// clusters that require one (mutual TLS). Both or neither.
	CertFile string
	KeyFile  string
	// ClusterID, when set, must be the nodes' cluster ID: a node of another
	// cluster refuses the requests.
	ClusterID string
}

// String prints the configuration with the token redacted; the TLS files
// and the cluster ID only when set.
func (c ClusterConfig) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "{Addrs:%q Token:%s", c.Addrs, redactSecret(c.Token))
	for _, f := range []struct{ name, value string }{
		{"CAFile", c.CAFile}, {"CertFile", c.CertFile}, {"KeyFile", c.KeyFile}, {"ClusterID", c.ClusterID},
	} {
		if f.value != "" {
			fmt.Fprintf(&b, " %s:%q", f.name, f.value)
		}
	}
	b.WriteString("}")
	return b.String()
}

// GoString is String, so that %#v does not print the token either.
func (c ClusterConfig) GoString() string { return "lock.ClusterConfig" + c.String() }

// String prints the configuration with every secret redacted.
func (c Config) String() string {
	if c.err != nil {
		return fmt.Sprintf("{Err:%q}", c.err.Error()) // ConfigFromEnv's errors hold no secret
	}
	return fmt.Sprintf("{Driver:%q Prefix:%q SQLite:{Path:%q Durable:%v} Redis:%s Postgres:%s Cluster:%s}",
		c.Driver, c.Prefix, c.SQLite.Path, c.SQLite.Durable, c.Redis, c.Postgres, c.Cluster)
}

// GoString is String, so that %#v does not print secrets either.
func (c Config) GoString() string { return "lock.Config" + c.String() }

// withDefaults returns a copy of c with every unset field at its default.
func (c Config) withDefaults() Config {
	if c.Driver == "" {
		c.Driver = DefaultDriver
	}
	c.Cluster.Addrs = slices.Clone(c.Cluster.Addrs)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports a configuration Open would reject, with unset fields
// taken at their defaults: also a driver whose package the program does
// not import (a *NotLinkedError). Only the selected driver's section is
// checked. Errors match ErrInvalid and never contain the Redis URL or the token.
//
// A Config that ConfigFromEnv returned with an error is invalid whatever
// is set on it afterwards: Validate returns that error.
func (c Config) Validate() error {
	if c.err != nil {
		return c.err
	}
	c = c.withDefaults()
	if _, err := drivers.Lookup(c.Driver); err != nil {
		return err
	}
	if err := validateHolder("Holder", c.Holder); err != nil {
		return err
	}
	if !utf8.ValidString(c.Prefix) {
		return &InvalidError{Field: "Prefix", Reason: "must be valid UTF-8"}
	}
	if len(c.Prefix) >= drivers.MaxKeyLen {
		return &InvalidError{Field: "Prefix", Reason: fmt.Sprintf("is %d bytes; keys with it must fit in %d", len(c.Prefix), drivers.MaxKeyLen)}
	}
	switch c.Driver {
	case "sqlite":
		if c.SQLite.Path == "" {
			return &InvalidError{Field: "SQLite.Path", Reason: `is required for the sqlite driver (LOCKCLUSTER_SQLITE_PATH): a file every process opens, or ":memory:" for a database private to this handle`}
		}
		if strings.ContainsRune(c.SQLite.Path, 0) {
			return &InvalidError{Field: "SQLite.Path", Reason: "must not contain a NUL byte"}
		}
	case "redis":
		return validateRedisURL(c.Redis.URL)
	case "postgres":
		if c.Postgres.URL == "" {
			return &InvalidError{Field: "Postgres.URL", Reason: "is required for the postgres driver (LOCKCLUSTER_POSTGRES_URL or DATABASE_URL)"}
		}
	case "cluster":
		if len(c.Cluster.Addrs) == 0 {
			return &InvalidError{Field: "Cluster.Addrs", Reason: "at least one node address is required (LOCKCLUSTER_ENDPOINTS)"}
		}
		for i, a := range c.Cluster.Addrs {
			if a == "" || strings.ContainsAny(a, " \t\r\n") {
				return &InvalidError{Field: "Cluster.Addrs", Reason: fmt.Sprintf("address %d is empty or contains spaces", i)}
			}
		}
		if (c.Cluster.CertFile == "") != (c.Cluster.KeyFile == "") {
			return &InvalidError{Field: "Cluster.CertFile/KeyFile", Reason: "a client certificate needs both (LOCKCLUSTER_TLS_CERT, LOCKCLUSTER_TLS_KEY)"}
		}
	}
	return nil
}

// validateRedisURL checks a Redis URL without ever echoing it: it may hold
// a password.
func validateRedisURL(raw string) error {
	if raw == "" {
		return &InvalidError{Field: "Redis.URL", Reason: "is required for the redis driver (REDIS_URL)"}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return &InvalidError{Field: "Redis.URL", Reason: "is not a valid URL"}
	}
	switch u.Scheme {
	case "redis", "rediss":
		if u.Host == "" {
			return &InvalidError{Field: "Redis.URL", Reason: "has no host"}
		}
	case "unix":
		if u.Path == "" {
			return &InvalidError{Field: "Redis.URL", Reason: "has no socket path"}
		}
	default:
		return &InvalidError{Field: "Redis.URL", Reason: fmt.Sprintf("scheme %q is not redis, rediss or unix", u.Scheme)}
	}
	return nil
}

// redactURL hides the credentials of a URL. A user name without a password
// is hidden too: some clients read it as the password.
func redactURL(raw string) string {
	if raw == "" {
		return `""`
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "<invalid URL, redacted>"
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		} else {
			u.User = url.User("xxxxx")
		}
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

func redactSecret(s string) string {
	if s == "" {
		return `""`
	}
	return "xxxxx"
}
