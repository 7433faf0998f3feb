package deploy

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/harness/cluster"
	"github.com/kubeharness/kubeharness/harness/kind"
	"github.com/kubeharness/kubeharness/internal/scheme"
)

// ToKind builds the manager image and the workload images specs run,
// loads them into every node of the kind cluster, marks the cluster
// disposable, server-side applies config/default and deploys the
// VirtualMachine controller (DeployVMToKind); it returns the cluster's
// REST config. Deploying an unchanged tree changes nothing.
func ToKind(ctx context.Context, kc *kind.Cluster, root string, out io.Writer) (*rest.Config, error) {
	return ToKindWith(ctx, kc, root, out, KindOptions{})
}

// KindOptions change what ToKindWith deploys.
type KindOptions struct {
	// Coverage deploys a manager built with -cover (BuildCoverManagerImage)
	// from CoverageConfig, whose counters CollectKindCoverage reads back.
	Coverage bool
}

// ToKindWith is ToKind with options.
func ToKindWith(ctx context.Context, kc *kind.Cluster, root string, out io.Writer, o KindOptions) (*rest.Config, error) {
	kubeconfig, err := kc.Kubeconfig()
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	build, config := BuildManagerImage, DefaultConfig
	if o.Coverage {
		build, config = BuildCoverManagerImage, CoverageConfig
	}
	image, err := build(ctx, root, out)
	if err != nil {
		return nil, err
	}
	workloads, err := WorkloadImages(ctx, root)
	if err != nil {
		return nil, err
	}
	if err := kc.LoadImages(ctx, append([]string{image}, workloads...)...); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, err
	}
	if err := cluster.MarkDisposable(ctx, c, "kubeharness kind up"); err != nil {
		return nil, err
	}
	if err := Deploy(ctx, c, DeployOptions{Root: root, Image: image, Out: out, Config: config}); err != nil {
		return nil, err
	}
	if _, err := DeployVMToKind(ctx, kc.LoadImages, c, root, out); err != nil {
		return nil, fmt.Errorf("deploying the VirtualMachine controller: %w", err)
	}
	return cfg, nil
}

// ManagerImage is the repository of the manager image the harness builds.
const ManagerImage = "kubeharness/manager"

// BuildManagerImage builds the manager image from Dockerfile (a static
// binary on scratch, nothing pulled) and returns a tag named after its
// content, so deploying an unchanged manager changes nothing.
func BuildManagerImage(ctx context.Context, root string, out io.Writer) (string, error) {
	return buildImage(ctx, root, "./cmd/manager", "manager", filepath.Join(root, "Dockerfile"), ManagerImage, nil, out)
}

// BuildCoverManagerImage is BuildManagerImage with the manager built with
// -cover (ManagerCoverFlags) into bin/images/manager-cover: the same
// Dockerfile, another binary, so another tag; the image BuildManagerImage
// makes stays what it was.
func BuildCoverManagerImage(ctx context.Context, root string, out io.Writer) (string, error) {
	return buildImage(ctx, root, "./cmd/manager", "manager-cover", filepath.Join(root, "Dockerfile"), ManagerImage, ManagerCoverFlags, out)
}

// buildImage builds the static binary of pkg (with the go build flags
// extra) as bin/images/<name>/<binary>, the binary named after pkg's last
// element (what dockerfile copies), builds dockerfile around it (FROM
// scratch: nothing pulled) and tags the image repo:<content id>.
func buildImage(ctx context.Context, root, pkg, name, dockerfile, repo string, extra []string, out io.Writer) (string, error) {
	dir := filepath.Join(root, "bin", "images", name)
	args := append([]string{"build", "-trimpath", "-ldflags", "-s -w"}, extra...)
	args = append(args, "-o", filepath.Join(dir, filepath.Base(pkg)), pkg)
	build := exec.CommandContext(ctx, "go", args...)
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %v\n%s", pkg, err, b)
	}
	dev := repo + ":dev"
	if len(extra) > 0 {
		dev = repo + ":cover" // never in place of the plain build's
	}
	docker := exec.CommandContext(ctx, "docker", "build", "-q", "-t", dev, "-f", dockerfile, dir)
	docker.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	b, err := docker.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("docker build of %s: %v\n%s", dev, err, b)
	}
	id, err := exec.CommandContext(ctx, "docker", "image", "inspect", "-f", "{{.Id}}", dev).Output()
	if err != nil {
		return "", fmt.Errorf("inspecting %s: %w", dev, err)
	}
	tag := repo + ":" + strings.TrimPrefix(strings.TrimSpace(string(id)), "sha256:")[:12]
	if b, err := exec.CommandContext(ctx, "docker", "tag", dev, tag).CombinedOutput(); err != nil {
		return "", fmt.Errorf("docker tag %s: %v\n%s", tag, err, b)
	}
	fmt.Fprintf(out, "%s image: %s\n", name, tag)
	return tag, nil
}
