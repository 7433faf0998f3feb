//go:build !unix

package binaries

import "os"

// writableByOthers is "" where file modes do not say who may write: the
// store's permissions are not checked there.
func writableByOthers(os.FileInfo) string { return "" }

// foreignOwner is "" where files have no owner kubeharness can read.
func foreignOwner(os.FileInfo) string { return "" }

// allowedOwners is never asked where foreignOwner names no one.
func allowedOwners() string { return "you" }
