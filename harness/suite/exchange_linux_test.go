package suite_test

import "golang.org/x/sys/unix"

// exchange swaps what the paths a and b name in one step.
func exchange(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}
