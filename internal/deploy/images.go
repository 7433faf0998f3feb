package deploy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/kubeharness/kubeharness/webhook/sidecar"
)

// SmokeImage runs e2e/images/smoke (hello, serve, lookup, get, tlsget): the
// workload of specs that need Pods to really run.
const SmokeImage = "kubeharness/smoke:e2e"

// SmokeServerImage serves HTTP on :8080 without arguments (smoke serve),
// for workloads that cannot pass arguments, such as an AppService.
const SmokeServerImage = "kubeharness/smoke-server:e2e"

// WorkloadImages builds the images specs on real nodes run, each FROM
// scratch around the static e2e/images/smoke binary, so nothing is pulled:
// SmokeImage, and stand-ins under the sidecar injector's default image
// names (the project ships no sidecar proxy), whose init container exits 0
// and whose sidecar serves HTTP, so an injected Pod really runs.
func WorkloadImages(ctx context.Context, root string) ([]string, error) {
	dir, err := os.MkdirTemp("", "kubeharness-images-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", filepath.Join(dir, "smoke"), "./e2e/images/smoke")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building e2e/images/smoke: %v\n%s", err, out)
	}
	d := sidecar.DefaultConfig()
	images := []struct{ tag, entrypoint string }{
		{SmokeImage, `["/smoke"]`},
		{SmokeServerImage, `["/smoke", "serve"]`},
		{d.InitImage, `["/smoke", "hello"]`},
		{d.SidecarImage, `["/smoke", "serve"]`},
	}
	var tags []string
	for _, img := range images {
		dockerfile := fmt.Sprintf("FROM scratch\nCOPY smoke /smoke\nUSER 65532:65532\nENTRYPOINT %s\nLABEL dev.kubeharness.e2e-workload=true\n", img.entrypoint)
		if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
			return nil, err
		}
		cmd := exec.CommandContext(ctx, "docker", "build", "-q", "-t", img.tag, dir)
		cmd.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("docker build of %s: %v\n%s", img.tag, err, out)
		}
		tags = append(tags, img.tag)
	}
	return tags, nil
}
