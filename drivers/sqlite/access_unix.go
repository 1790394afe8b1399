//go:build unix

package sqlite

import "syscall"

// writable reports whether this process may write the file at path, or
// create files in it when it is a directory, as the kernel would decide.
func writable(path string, dir bool) error {
	const wOK, xOK = 0x2, 0x1
	mode := uint32(wOK)
	if dir {
		mode |= xOK
	}
	return syscall.Access(path, mode)
}
