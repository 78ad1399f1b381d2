package hooks

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Binary is the hook program without the Temporal SDK (intentq-hook). Setup installs it when it
// sits beside the starter, which it hands what it does not answer.
const Binary = "intentq-hook"

// StarterBinary is the starter's program name: intentq-hook finds it beside itself.
const StarterBinary = "starter"

// Runnable says why this user cannot run the program at path (nil: it can): it is missing, or
// not a file this user may execute. Setup installs a hook program only when it is runnable, and
// doctor fails a hook whose program is not.
func Runnable(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s does not exist", path)
	case err != nil:
		return fmt.Errorf("%s cannot be read: %w", path, err)
	case !fi.Mode().IsRegular() || unix.Access(path, unix.X_OK) != nil:
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}
