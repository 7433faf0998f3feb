//go:build !unix

package ownership

import "io/fs"

// OthersMayWrite is "" where file modes do not say who may write.
func OthersMayWrite(fs.FileInfo) string { return "" }

// ForeignOwner is "" where files have no owner kubeharness can read.
func ForeignOwner(fs.FileInfo) string { return "" }

// AllowedOwners is never asked where ForeignOwner names no one.
func AllowedOwners() string { return "you" }
