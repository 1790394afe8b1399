package supervise

import (
	"bytes"
	"os"
	"strconv"
)

// groupAllZombies reports whether every process of group pgid is a zombie
// (or gone), reading /proc/PID/stat: its third field is the state, its
// fifth the process group. A process that cannot be read has exited.
func groupAllZombies(pgid int) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false // cannot tell: keep waiting for the group to empty
	}
	want := []byte(strconv.Itoa(pgid))
	for _, e := range entries {
		name := e.Name()
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		stat, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and
		// parentheses, so split after its last ')'.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(stat[i+1:])
		if len(f) < 3 || !bytes.Equal(f[2], want) {
			continue
		}
		if state := f[0][0]; state != 'Z' && state != 'X' {
			return false
		}
	}
	return true
}
