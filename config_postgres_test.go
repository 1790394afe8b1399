package lock_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/zerotal/lock"
)

// LOCKCLUSTER_POSTGRES_URL selects the postgres driver as the other
// backends' variables do theirs; DATABASE_URL does when it is a
// postgres:// URL and no other backend variable is set, and never
// outvotes one; the URL's password is never printed.
func TestConfigFromEnv_Postgres(t *testing.T) {
	url := "postgres://app:" + secret + "@db:5432/app"
	for _, c := range []struct {
		name   string
		env    map[string]string
		driver string
		url    string
		err    bool
	}{
		{"own variable", map[string]string{"LOCKCLUSTER_POSTGRES_URL": url}, "postgres", url, false},
		{"DATABASE_URL alone", map[string]string{"DATABASE_URL": url}, "postgres", url, false},
		{"postgresql:// too", map[string]string{"DATABASE_URL": "postgresql://db/app"}, "postgres", "postgresql://db/app", false},
		{"own variable first", map[string]string{"LOCKCLUSTER_POSTGRES_URL": url, "DATABASE_URL": "postgres://other/x"}, "postgres", url, false},
		{"another database's URL", map[string]string{"DATABASE_URL": "mysql://db/app"}, "", "", false},
		{"beside REDIS_URL", map[string]string{"DATABASE_URL": url, "REDIS_URL": "redis://127.0.0.1:6379/0"}, "redis", "", false},
		{"driver named", map[string]string{"LOCKCLUSTER_DRIVER": "postgres", "DATABASE_URL": "host=db dbname=app"}, "postgres", "host=db dbname=app", false},
		{"beside another backend's own", map[string]string{"LOCKCLUSTER_POSTGRES_URL": url, "REDIS_URL": "redis://127.0.0.1:6379/0"}, "", "", true},
		{"no URL", map[string]string{"LOCKCLUSTER_DRIVER": "postgres"}, "", "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			cfg, err := lock.ConfigFromEnv()
			if c.err {
				if !errors.Is(err, lock.ErrInvalid) || strings.Contains(err.Error(), secret) {
					t.Fatalf("ConfigFromEnv = %v, %v; want an invalid config that does not print the password", cfg, err)
				}
				return
			}
			if err != nil || cfg.Driver != c.driver || cfg.Postgres.URL != c.url {
				t.Fatalf("ConfigFromEnv = driver %q URL set %v, %v; want %q", cfg.Driver, cfg.Postgres.URL != "", err, c.driver)
			}
			for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
				if s := fmt.Sprintf(format, cfg); strings.Contains(s, secret) {
					t.Errorf("%s of the config prints the password: %s", format, s)
				}
			}
		})
	}
}
