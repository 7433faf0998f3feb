//go:build !linux

package suite_test

import "errors"

// exchange swaps what the paths a and b name in one step, which only
// Linux's renameat2 does.
func exchange(a, b string) error {
	return errors.New("renameat2 with RENAME_EXCHANGE is Linux's")
}
