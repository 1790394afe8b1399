//go:build !race

package sqlite_test

// raceEnabled: the race detector slows every process several times over.
const raceEnabled = false
