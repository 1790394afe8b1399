package redis

import (
	"log/slog"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/zerotal/lock/drivers"
)

// DefaultPollInterval is how often a waiter checks the key on its own when
// no wake-up arrives. Wake-ups are pushed, so this only covers messages lost
// while the subscription was reconnecting.
const DefaultPollInterval = time.Second

// DefaultPipelineAt is how many calls of one driver must be in flight at
// once before they are batched into pipelines.
const DefaultPipelineAt = 4

// Config configures a Driver opened with Open. Set exactly one of URL and
// Client.
type Config struct {
	// URL is a redis:// or rediss:// (TLS) URL, with optional user,
	// password and database number: redis://user:password@host:6379/0.
	// Query options such as dial_timeout are those of go-redis ParseURL.
	// The driver opens the client and closes it on Close.
	URL string

	// Client is a client the application already has (a plain client, a
	// failover client or a cluster client). The driver never closes it.
	Client goredis.UniversalClient

	// PollInterval bounds how long a waiter goes without checking the key
	// when no release message reaches it. Zero means DefaultPollInterval.
	PollInterval time.Duration

	// PipelineAt: when at least this many calls of the driver are in flight
	// at once, this one included, they are sent together, one pipeline per
	// round trip (the calls that arrive while one is on the wire make up the
	// next); with fewer, each call has a connection to itself. 1 always
	// batches; a negative value never does. Zero means DefaultPipelineAt,
	// for a client opened from URL and an application's Client alike: the
	// batches use the client's ordinary Pipeline and change nothing on it.
	PipelineAt int

	// Logger receives the driver's few messages (subscription trouble),
	// and go-redis's own (see the package documentation, "Logging"). Nil
	// means no logging.
	Logger *slog.Logger
}

// Validate reports a configuration that cannot work, before any
// connection is made.
func (c Config) Validate() error {
	switch {
	case c.URL == "" && c.Client == nil:
		return &drivers.InvalidError{Field: "redis config", Reason: "set URL or Client"}
	case c.URL != "" && c.Client != nil:
		return &drivers.InvalidError{Field: "redis config", Reason: "set URL or Client, not both"}
	case c.PollInterval < 0:
		return &drivers.InvalidError{Field: "PollInterval", Reason: "must not be negative"}
	}
	return nil
}

// withDefaults returns a copy of c with the zero fields filled in; the
// caller's Config is never changed.
func (c Config) withDefaults() Config {
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Option adjusts a Driver built with New.
type Option func(*Config)

// WithPollInterval sets Config.PollInterval.
func WithPollInterval(d time.Duration) Option {
	return func(c *Config) { c.PollInterval = d }
}

// WithPipelineAt sets Config.PipelineAt.
func WithPipelineAt(n int) Option {
	return func(c *Config) { c.PipelineAt = n }
}

// WithLogger sets Config.Logger.
func WithLogger(l *slog.Logger) Option {
	return func(c *Config) { c.Logger = l }
}
