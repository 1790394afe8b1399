package integration

import (
	"errors"
	"os/exec"
)

// exitCode returns a finished command's exit status (-1 when it did not run).
func exitCode(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	return -1
}
