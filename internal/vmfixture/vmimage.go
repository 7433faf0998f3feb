package vmfixture

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/kubeharness/kubeharness/operator/vm/driver"
)

// VMImageSource is the directory, below the repository root, of the
// program VMImage runs (package main, standard library only).
const VMImageSource = "e2e/images/vm"

// VMImage is the image of VirtualMachines without spec.image in the
// harness; with the docker driver, the harness builds it from
// VMImageSource before the controller starts (EnsureVMImage).
const VMImage = "kubeharness/vm:e2e"

// VMImageSourceLabel is the image label that carries the hash of the
// program's source (and the platform it was built for): an image whose
// label differs from the source's hash is built again.
const VMImageSourceLabel = "kubeharness.dev/vm-image-source"

// ErrNoDockerDaemon is returned (wrapped, with the cause) when no Docker
// daemon answers, or the environment names none the docker driver can use.
var ErrNoDockerDaemon = errors.New("no Docker daemon answers")

// dockerPingTimeout bounds how long a Docker daemon has to answer a ping,
// the one check every caller makes (PingDocker): a daemon behind a
// firewall that drops packets would otherwise hold the caller for minutes.
const dockerPingTimeout = 10 * time.Second

// NewDockerClient returns a client of the Docker daemon the docker driver
// talks to: $DOCKER_HOST (else the local socket), TLS from
// $DOCKER_TLS_VERIFY and $DOCKER_CERT_PATH (~/.docker when only
// $DOCKER_TLS_VERIFY is set) and $DOCKER_API_VERSION, as the Docker CLI and
// driver.NewDocker read them. It checks first, with driver.NewDocker, that
// the environment is usable, so that a bad setting is reported in the
// driver's words. The API version is negotiated on first use.
func NewDockerClient() (*client.Client, error) {
	d, err := driver.NewDocker(driver.DockerOptions{})
	if err != nil {
		return nil, err
	}
	_ = d.Close()
	opts := []client.Opt{client.FromEnv}
	if os.Getenv(client.EnvTLSVerify) != "" && os.Getenv(client.EnvOverrideCertPath) == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("docker client: %s is set without %s and there is no home directory for ~/.docker: %w",
				client.EnvTLSVerify, client.EnvOverrideCertPath, err)
		}
		dir := filepath.Join(home, ".docker")
		opts = append(opts, client.WithTLSClientConfig(
			filepath.Join(dir, driver.CAFile), filepath.Join(dir, driver.CertFile), filepath.Join(dir, driver.KeyFile)))
	}
	cli, err := client.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker client for %s: %w", d.Host(), err)
	}
	return cli, nil
}

// PingDocker checks that the Docker daemon the docker driver would use
// answers within dockerPingTimeout, and returns its address. Its error
// wraps ErrNoDockerDaemon and the driver's, which says what was wrong: the
// daemon at the address did not answer, or the environment names none the
// driver can use (a bad $DOCKER_HOST, TLS material missing).
func PingDocker(ctx context.Context) (host string, err error) {
	d, err := driver.NewDocker(driver.DockerOptions{})
	if err != nil {
		return cmp.Or(os.Getenv(driver.EnvDockerHost), client.DefaultDockerHost), fmt.Errorf("%w: %w", ErrNoDockerDaemon, err)
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(ctx, dockerPingTimeout)
	defer cancel()
	if err := d.Ping(ctx); err != nil {
		return d.Host(), fmt.Errorf("%w at %s: %w", ErrNoDockerDaemon, d.Host(), err)
	}
	return d.Host(), nil
}

// EnsureVMImage makes sure the Docker daemon has VMImage built from the
// current source of VMImageSource below root: when an image of that name
// carries the source's hash in VMImageSourceLabel it does nothing;
// otherwise it builds the program (go build, static, -trimpath, for the
// daemon's architecture) into a temporary directory and imports it as a
// one-file image (/vm, its command) from an in-memory tar. The image it
// replaced is removed when nothing uses it. Nothing is pulled. out is told
// what it did. An error wrapping ErrNoDockerDaemon means no daemon
// answered.
func EnsureVMImage(ctx context.Context, root string, out io.Writer) error {
	if out == nil {
		out = io.Discard
	}
	if _, err := PingDocker(ctx); err != nil {
		return err
	}
	cli, err := NewDockerClient()
	if err != nil {
		return err
	}
	defer cli.Close()
	ver, err := cli.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return fmt.Errorf("docker daemon version: %w", err)
	}
	hash, err := vmImageSourceHash(filepath.Join(root, VMImageSource), ver.Os, ver.Arch)
	if err != nil {
		return err
	}

	previous := ""
	switch img, err := cli.ImageInspect(ctx, VMImage); {
	case err == nil:
		if img.Config != nil && img.Config.Labels[VMImageSourceLabel] == hash {
			fmt.Fprintf(out, "vm image %s: up to date (%s %s)\n", VMImage, VMImageSourceLabel, hash)
			return nil
		}
		previous = img.ID
	case !cerrdefs.IsNotFound(err):
		return fmt.Errorf("inspecting image %s: %w", VMImage, err)
	}

	start := time.Now()
	fmt.Fprintf(out, "vm image %s: building %s for %s/%s (source %s)\n", VMImage, VMImageSource, ver.Os, ver.Arch, hash)
	bin, err := buildVMProgram(ctx, root, ver.Os, ver.Arch)
	if err != nil {
		return err
	}
	layer, err := oneFileTar("vm", bin)
	if err != nil {
		return err
	}
	res, err := cli.ImageImport(ctx, client.ImageImportSource{Source: layer, SourceName: "-"}, VMImage, client.ImageImportOptions{
		Message: "built from " + VMImageSource,
		Changes: []string{`CMD ["/vm"]`, fmt.Sprintf("LABEL %s=%s", VMImageSourceLabel, hash)},
	})
	if err != nil {
		return fmt.Errorf("importing image %s: %w", VMImage, err)
	}
	msg, err := io.ReadAll(res)
	_ = res.Close()
	if err != nil {
		return fmt.Errorf("importing image %s: %w", VMImage, err)
	}
	img, err := cli.ImageInspect(ctx, VMImage)
	if err != nil {
		return fmt.Errorf("image %s was not imported (%s): %w", VMImage, bytes.TrimSpace(msg), err)
	}
	if img.Config == nil || img.Config.Labels[VMImageSourceLabel] != hash || !slices.Equal(img.Config.Cmd, []string{"/vm"}) {
		return fmt.Errorf("image %s came out without its command or source label (%s)", VMImage, bytes.TrimSpace(msg))
	}
	fmt.Fprintf(out, "vm image %s: imported %s (%d bytes) in %s\n", VMImage, img.ID, len(bin), time.Since(start).Round(time.Millisecond))
	if previous != "" && previous != img.ID {
		// Not forced: an image a container still uses stays.
		if _, err := cli.ImageRemove(ctx, previous, client.ImageRemoveOptions{}); err != nil {
			fmt.Fprintf(out, "vm image %s: the previous image %s stays: %v\n", VMImage, previous, err)
		}
	}
	return nil
}

// vmImageSourceHash hashes the files of dir (names and contents, in name
// order) and the platform built for.
func vmImageSourceHash(dir, goos, goarch string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("the vm image's source: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s/%s\n", goos, goarch)
	for _, e := range entries { // ReadDir sorts by name
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return "", fmt.Errorf("the vm image's source: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", e.Name(), len(b))
		h.Write(b)
	}
	return "sha256-" + hex.EncodeToString(h.Sum(nil))[:32], nil
}

// buildVMProgram builds VMImageSource statically for goos/goarch and
// returns the executable.
func buildVMProgram(ctx context.Context, root, goos, goarch string) ([]byte, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("the go command builds the vm image: %w", err)
	}
	dir, err := os.MkdirTemp("", "kubeharness-vm-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "vm")
	cmd := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./"+VMImageSource)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build ./%s: %w\n%s", VMImageSource, err, out)
	}
	return os.ReadFile(bin)
}

// oneFileTar is a tar holding content as the executable /name.
func oneFileTar(name string, content []byte) (*bytes.Buffer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(content)), ModTime: time.Unix(0, 0)}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(content); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return &buf, nil
}
