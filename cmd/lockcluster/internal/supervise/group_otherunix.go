//go:build unix && !linux

package supervise

// groupAllZombies cannot tell zombies apart here without cgo: run waits for
// the group to empty, which it does as soon as init reaps the orphans.
func groupAllZombies(int) bool { return false }
