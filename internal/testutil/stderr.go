package testutil

import "os"

// TB is the part of testing.TB the helpers here use (this package is also
// built into kubeharness, which does not link the testing package).
type TB interface {
	Helper()
	Fatal(args ...any)
}

// WithoutStderr runs f with the process's standard error discarded, for
// code under test that prints notes there, and returns what f returns.
func WithoutStderr(t TB, f func() error) error {
	t.Helper()
	return without(t, &os.Stderr, f)
}

// WithoutStdout is WithoutStderr for standard output.
func WithoutStdout(t TB, f func() error) error {
	t.Helper()
	return without(t, &os.Stdout, f)
}

// without runs f with *std pointing at the null device.
func without(t TB, std **os.File, f func() error) error {
	t.Helper()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	old := *std
	*std = devnull
	defer func() { *std = old }()
	return f()
}
