package lock_test

import (
	"errors"
	"testing"

	"github.com/zerotal/lock"
)

// A Config that ConfigFromEnv returned with an error must not open: the
// zero Config is the memory driver, and a program that drops the error
// (cfg, _ := lock.ConfigFromEnv()) would otherwise take locks no other
// process sees. Each failure of ConfigFromEnv comes back from Validate and
// Open, matching the same sentinel. (A driver that is not linked is
// tested in a program that links none: TestOpen_MemoryOnlyProgramLinksNoOtherBackend.)
func TestConfigFromEnv_FailedConfigCannotBeOpened(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want error
	}{
		{"two backends without a driver", map[string]string{lock.EnvEndpoints: "127.0.0.1:7001", lock.EnvRedisURL: "redis://127.0.0.1:6379/0"}, lock.ErrInvalid},
		{"three backends without a driver", map[string]string{lock.EnvEndpoints: "127.0.0.1:7001", lock.EnvRedisURL: "redis://127.0.0.1:6379/0", lock.EnvSQLitePath: "/tmp/x.db"}, lock.ErrInvalid},
		{"durable not a boolean", map[string]string{lock.EnvSQLitePath: "/tmp/x.db", lock.EnvSQLiteDurable: "yes please"}, lock.ErrInvalid},
		{"unknown driver", map[string]string{lock.EnvDriver: "etcd"}, lock.ErrInvalid},
		{"redis URL of another scheme", map[string]string{lock.EnvRedisURL: "http://:" + secret + "@h:1"}, lock.ErrInvalid},
		{"redis driver without a URL", map[string]string{lock.EnvDriver: "redis"}, lock.ErrInvalid},
		{"cluster driver without endpoints", map[string]string{lock.EnvDriver: "cluster"}, lock.ErrInvalid},
		{"client certificate without its key", map[string]string{lock.EnvEndpoints: "127.0.0.1:7001", lock.EnvTLSCert: "/tmp/c.pem"}, lock.ErrInvalid},
		{"prefix not UTF-8", map[string]string{lock.EnvPrefix: "\xff"}, lock.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			cfg, err := lock.ConfigFromEnv()
			if !errors.Is(err, tc.want) {
				t.Fatalf("ConfigFromEnv = %v, want %v", err, tc.want)
			}
			if verr := cfg.Validate(); !errors.Is(verr, tc.want) || verr.Error() != err.Error() {
				t.Errorf("Validate of the returned Config = %v, want %v", verr, err)
			}
			m, oerr := lock.Open(t.Context(), cfg)
			if m != nil {
				_ = m.Close()
				t.Fatalf("Open of the Config returned with %q opened the %T driver", err, m.Driver())
			}
			if !errors.Is(oerr, tc.want) || oerr.Error() != err.Error() {
				t.Fatalf("Open of the returned Config = %v, want %v", oerr, err)
			}
			// Set on afterwards, a field does not make it usable: the
			// error stays until a new Config is built.
			cfg.Driver = "memory"
			if m, oerr := lock.Open(t.Context(), cfg); m != nil || !errors.Is(oerr, tc.want) {
				if m != nil {
					_ = m.Close()
				}
				t.Fatalf("Open after setting Driver = %v, %v; want %v", m, oerr, err)
			}
		})
	}
	// The zero Config, which programs build themselves, still opens the
	// memory driver.
	clearEnv(t)
	m, err := lock.Open(t.Context(), lock.Config{})
	if err != nil {
		t.Fatal(err)
	}
	_ = m.Close()
}
