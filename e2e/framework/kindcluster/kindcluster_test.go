package kindcluster

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/harness/binaries"
)

// TestSelectNodeImageHonoursExplicitImage: a named image is used as it is,
// and the choice is said, without touching Docker or the lockfile.
func TestSelectNodeImageHonoursExplicitImage(t *testing.T) {
	t.Setenv(ImageEnv, "example.com/node:v1")
	var out bytes.Buffer
	got, err := SelectNodeImage(context.Background(), t.TempDir(), binaries.Request{}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if got != "example.com/node:v1" {
		t.Errorf("image %q, want the one $%s names", got, ImageEnv)
	}
	if !strings.Contains(out.String(), "from $"+ImageEnv) {
		t.Errorf("the choice is not explained: %q", out.String())
	}
}

func TestName(t *testing.T) {
	t.Setenv(NameEnv, "")
	if Name() != DefaultName {
		t.Errorf("Name() = %q without $%s, want %q", Name(), NameEnv, DefaultName)
	}
	t.Setenv(NameEnv, "dev")
	if Name() != "dev" {
		t.Errorf("Name() = %q, want $%s", Name(), NameEnv)
	}
}
