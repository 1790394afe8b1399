package fence_test

import (
	"errors"
	"testing"

	"github.com/zerotal/lock/fence"
)

func TestHeader_RoundTripsAnyKey(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"invoice/123", "a b", "100%", "ключ", "x\ny", "  "} {
		v := fence.FormatHeader(key, 42)
		resource, f, err := fence.ParseHeader(v)
		if err != nil || resource != key || f != 42 {
			t.Errorf("%q as %q read back as %q %d %v", key, v, resource, f, err)
		}
	}
}

func TestParseHeader_RefusesWhatCannotBeChecked(t *testing.T) {
	t.Parallel()
	for _, v := range []string{
		"", "invoice", "invoice x", "invoice -1", "invoice 0", " 5",
		"invoice 9223372036854775808", // above MaxFence
		"in%zzvoice 5",
	} {
		if _, _, err := fence.ParseHeader(v); !errors.Is(err, fence.ErrInvalid) {
			t.Errorf("ParseHeader(%q) = %v, want ErrInvalid", v, err)
		}
	}
}
