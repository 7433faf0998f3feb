package binaries

import (
	"context"
	"errors"
	"testing"

	"github.com/kubeharness/kubeharness/harness/versions"
)

// TestUseNeedsUnixOnWindows: on Windows the store provides nothing and
// says what to use instead.
func TestUseNeedsUnixOnWindows(t *testing.T) {
	sel, err := versions.ParseSelector("1.37.1", versions.SourceArg)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = Store{Dir: t.TempDir()}.Use(context.Background(), sel, UseOptions{})
	if !errors.Is(err, ErrNeedsUnix) {
		t.Fatalf("Use on Windows: %v, want ErrNeedsUnix", err)
	}
}
