package lock

import (
	"fmt"
	"strings"
	"time"
	"unicode"
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

// validateMaxHold checks a cap on total hold time (WithMaxHold): 0 is
// none, else a duration in the TTL's range, which every backend records.
func validateMaxHold(d time.Duration) error {
	switch {
	case d < 0:
		return &InvalidError{Field: "max hold", Reason: fmt.Sprintf("must not be negative, got %v", d)}
	case d > 0 && d < drivers.MinTTL:
		return &InvalidError{Field: "max hold", Reason: fmt.Sprintf("must be 0 (no cap) or at least %v, got %v", drivers.MinTTL, d)}
	case d > drivers.MaxTTL:
		return &InvalidError{Field: "max hold", Reason: fmt.Sprintf("must be at most %v, got %v", drivers.MaxTTL, d)}
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

// validateHolder checks a holder description (WithHolder, Config.Holder,
// reported as field): at most MaxHolderLen bytes of visible characters,
// without spaces. Others see it as given, after the owner's token, in
// key=value lines ("lockcluster run"), in the columns of "lockcluster
// locks" and in errors, so it is one word that cannot break a line or
// hide behind an invisible character; and it is never cut, so a long one
// is refused rather than shown to others shortened.
func validateHolder(field, h string) error {
	switch {
	case len(h) > MaxHolderLen:
		return &InvalidError{Field: field, Reason: fmt.Sprintf("is %d bytes; the limit is %d (MaxHolderLen)", len(h), MaxHolderLen)}
	case !utf8.ValidString(h):
		return &InvalidError{Field: field, Reason: "must be valid UTF-8"}
	}
	if i := strings.IndexFunc(h, notHolderRune); i >= 0 {
		r, _ := utf8.DecodeRuneInString(h[i:])
		return &InvalidError{Field: field, Reason: fmt.Sprintf(
			"contains %U at byte %d: a holder is one word of visible characters, no spaces or control characters (as pid4242@host-3)", r, i)}
	}
	return nil
}

// notHolderRune reports a rune a holder description may not contain:
// anything but a visible character (a letter, mark, digit, punctuation
// or symbol of any script).
func notHolderRune(r rune) bool { return !unicode.IsGraphic(r) || unicode.IsSpace(r) }

// fitHolder makes h a valid holder description: what it may not contain
// becomes '_', and it is cut to MaxHolderLen bytes.
func fitHolder(h string) string {
	h = strings.Map(func(r rune) rune {
		if notHolderRune(r) {
			return '_'
		}
		return r
	}, strings.ToValidUTF8(h, "_"))
	for len(h) > MaxHolderLen {
		_, n := utf8.DecodeLastRuneInString(h)
		h = h[:len(h)-n]
	}
	return h
}
