// Package integration holds the multi-process tests: real lockcluster
// processes built once per run, killed and restarted by PID, each node with
// its own data directory and loopback ports.
//
//	go test -race -count=1 ./integration/
//
// -short skips them.
package integration
