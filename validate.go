package lock

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/zerotal/lock/drivers"
)

// validateKey checks a key as the caller wrote it, given the prefix the
// Manager will add.
func validateKey(prefix, key string) error {
	switch {
	case key == "":
		return &InvalidError{Field: "key", Reason: "must not be empty"}
	case !utf8.ValidString(key):
		return &InvalidError{Field: "key", Reason: "must be valid UTF-8"}
	case !utf8.ValidString(prefix):
		return &InvalidError{Field: "prefix", Reason: "must be valid UTF-8"}
	case len(prefix)+len(key) > drivers.MaxKeyLen:
		return &InvalidError{Field: "key", Reason: fmt.Sprintf(
			"is %d bytes with the %d-byte prefix; the limit is %d", len(prefix)+len(key), len(prefix), drivers.MaxKeyLen)}
	}
	return nil
}

func validateTTL(ttl time.Duration) error {
	switch {
	case ttl < drivers.MinTTL:
		return &InvalidError{Field: "ttl", Reason: fmt.Sprintf("must be at least %v, got %v", drivers.MinTTL, ttl)}
	case ttl > drivers.MaxTTL:
		return &InvalidError{Field: "ttl", Reason: fmt.Sprintf("must be at most %v, got %v", drivers.MaxTTL, ttl)}
	}
	return nil
}

// validateOwner checks an owner token given with WithOwner.
func validateOwner(owner string) error {
	switch {
	case owner == "":
		return &InvalidError{Field: "owner", Reason: "must not be empty"}
	case !utf8.ValidString(owner):
		return &InvalidError{Field: "owner", Reason: "must be valid UTF-8"}
	case len(owner) > drivers.MaxOwnerLen:
		return &InvalidError{Field: "owner", Reason: fmt.Sprintf("is %d bytes; the limit is %d", len(owner), drivers.MaxOwnerLen)}
	}
	return nil
}
