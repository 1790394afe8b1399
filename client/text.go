package client

import (
	"unicode/utf8"

	"github.com/zerotal/lock/drivers"
)

// checkText refuses text that is not valid UTF-8 before any request is
// sent; field names it in the error. The cluster's keys are UTF-8: JSON
// would silently replace the bad bytes with U+FFFD, so that two different
// keys would name one lock, and the same key sent in a query string (Get)
// would name yet another, so that a held lock would read as free.
func checkText(field, s string) error {
	if utf8.ValidString(s) {
		return nil
	}
	return &drivers.InvalidError{Field: field, Reason: "must be valid UTF-8"}
}

// checkKeyOwner is checkText for a key and an owner token.
func checkKeyOwner(key, owner string) error {
	if err := checkText("key", key); err != nil {
		return err
	}
	return checkText("owner", owner)
}
