//go:build !unix

package sqlite

// writable leaves the check to SQLite where access(2) does not exist.
func writable(string, bool) error { return nil }
