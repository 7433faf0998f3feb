//go:build !unix

package binaries

// runHelper: the helper process of partial_test.go runs on Unix systems.
func runHelper() {}
