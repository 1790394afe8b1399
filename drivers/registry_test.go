package drivers_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/zerotal/lock/drivers"
)

// This test binary imports no driver package: every driver of the module
// is known but not linked.
func TestLookup_NotLinkedNamesTheImport(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"memory", "sqlite", "redis", "postgres", "cluster"} {
		open, err := drivers.Lookup(name)
		if open != nil {
			t.Fatalf("Lookup(%q) found an opener in a program that imports no driver", name)
		}
		var nl *drivers.NotLinkedError
		if !errors.As(err, &nl) || !errors.Is(err, drivers.ErrNotLinked) || !errors.Is(err, drivers.ErrInvalid) {
			t.Fatalf("Lookup(%q) = %v, want a *NotLinkedError matching ErrNotLinked and ErrInvalid", name, err)
		}
		want := `lock: driver "` + name + `" is not linked into this program: add import _ "github.com/zerotal/lock/drivers/` + name + `"`
		if err.Error() != want {
			t.Errorf("Lookup(%q) = %q, want %q", name, err, want)
		}
	}
}

func TestLookup_UnknownDriverListsTheValidOnes(t *testing.T) {
	t.Parallel()
	_, err := drivers.Lookup("etcd")
	var inv *drivers.InvalidError
	if !errors.As(err, &inv) || errors.Is(err, drivers.ErrNotLinked) {
		t.Fatalf("Lookup(etcd) = %v, want an *InvalidError that is not ErrNotLinked", err)
	}
	// (Other tests may register more names, sorted after these.)
	if want := `lock: invalid Driver: unknown driver "etcd"; valid drivers: cluster, memory, postgres, redis, sqlite`; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Lookup(etcd) = %q, want it to start with %q", err, want)
	}
}

type nopDriver struct{ drivers.Driver }

func TestRegister_LookupAndDuplicates(t *testing.T) {
	t.Parallel()
	want := nopDriver{}
	drivers.Register("test-registry", func(context.Context, drivers.OpenOptions) (drivers.Driver, error) { return want, nil })
	open, err := drivers.Lookup("test-registry")
	if err != nil {
		t.Fatal(err)
	}
	if d, err := open(t.Context(), drivers.OpenOptions{}); err != nil || d != want {
		t.Fatalf("opener = %v, %v", d, err)
	}
	if !slices.Contains(drivers.Names(), "test-registry") {
		t.Errorf("Names() = %v, want test-registry among them", drivers.Names())
	}
	for name, open := range map[string]drivers.Opener{
		"test-registry": func(context.Context, drivers.OpenOptions) (drivers.Driver, error) { return nil, nil },
		"test-nil":      nil,
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q) did not panic", name)
				}
			}()
			drivers.Register(name, open)
		}()
	}
}
