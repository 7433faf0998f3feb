package kind

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestSelectHonoursExplicitImage: a named image is used as it is, and the
// choice is said, without touching Docker or building anything.
func TestSelectHonoursExplicitImage(t *testing.T) {
	t.Setenv(ImageEnv, "example.com/node:v1")
	var out bytes.Buffer
	images := NodeImages{Stock: "kindest/node:v1", Offline: "offline:v1", BuildOffline: func(context.Context, string, io.Writer) error {
		t.Error("built the offline image although $" + ImageEnv + " names one")
		return nil
	}}
	got, err := images.Select(context.Background(), &out)
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

// TestSelectOfflineBuildsTheOfflineImage: with $KIND_OFFLINE the stock image
// is not tried, the offline one is built, and a failed build is an error
// that names the image.
func TestSelectOfflineBuildsTheOfflineImage(t *testing.T) {
	t.Setenv(ImageEnv, "")
	t.Setenv(OfflineEnv, "1")
	var built []string
	images := NodeImages{Stock: "kindest/node:v1", Offline: "offline:v1", BuildOffline: func(_ context.Context, image string, _ io.Writer) error {
		built = append(built, image)
		return nil
	}}
	var out bytes.Buffer
	got, err := images.Select(context.Background(), &out)
	if err != nil {
		t.Fatal(err)
	}
	if got != "offline:v1" || len(built) != 1 || built[0] != "offline:v1" {
		t.Errorf("Select = %q, built %v; want offline:v1 built once", got, built)
	}
	images.BuildOffline = func(context.Context, string, io.Writer) error { return errors.New("no debootstrap") }
	if _, err := images.Select(context.Background(), &out); err == nil || !strings.Contains(err.Error(), "offline:v1") {
		t.Errorf("a failed build gave %v, want an error naming the image", err)
	}
	images.Offline = ""
	if _, err := images.Select(context.Background(), &out); err == nil || !strings.Contains(err.Error(), ImageEnv) {
		t.Errorf("no image at all gave %v, want an error that says to set $%s", err, ImageEnv)
	}
}

func TestName(t *testing.T) {
	t.Setenv(NameEnv, "")
	if got := Name("kubeharness"); got != "kubeharness" {
		t.Errorf("Name() = %q without $%s, want the default", got, NameEnv)
	}
	t.Setenv(NameEnv, "dev")
	if got := Name("kubeharness"); got != "dev" {
		t.Errorf("Name() = %q, want $%s", got, NameEnv)
	}
}
