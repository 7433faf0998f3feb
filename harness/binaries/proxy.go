package binaries

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"

	"golang.org/x/mod/semver"

	"github.com/kubeharness/kubeharness/harness/versions"
)

var _ versions.Proxy = &Builder{}

// NewResolver reads versions.yaml below root and asks the Go module proxy
// through the go command (a Builder). An empty root (outside the kubeharness
// repository) means no versions.yaml: a patch must be one the proxy serves,
// a minor is its newest patch the proxy serves, and a request must name a
// version.
func NewResolver(root string, out io.Writer) (*versions.Resolver, error) {
	b := &Builder{Root: root, Out: out}
	lock, err := b.lockfile()
	if err != nil {
		return nil, err
	}
	return &versions.Resolver{Lock: lock, Proxy: b, Out: out}, nil
}

// Lists implements versions.Proxy with `go list -m`, which asks the proxy
// for the version's .info.
func (b *Builder) Lists(ctx context.Context, version versions.Version) (bool, error) {
	_, err := b.goOutput(ctx, "", "list", "-m", "-json", modVersion(KubeAPIServer.Module, version))
	if err == nil {
		return true, nil
	}
	if unreachable(err.Error()) {
		return false, errors.New(firstLine(err.Error()))
	}
	return false, nil
}

// Serves implements versions.Proxy: it downloads k8s.io/kubernetes at
// version and every staging module it builds with.
func (b *Builder) Serves(ctx context.Context, version versions.Version) error {
	return b.checkComplete(ctx, version)
}

// checkComplete downloads k8s.io/kubernetes at version and every staging
// module it needs at the matching v0 version: the proxy sometimes serves the
// one and refuses some of the others.
func (b *Builder) checkComplete(ctx context.Context, version versions.Version) error {
	mod, err := b.readKubeGoMod(ctx, version)
	if err != nil {
		return err
	}
	staging, err := mod.stagingModules()
	if err != nil {
		return err
	}
	v0 := stagingVersion(version)
	// One go command for them all; a module that fails is asked again
	// alone, for its error.
	args := []string{"mod", "download", "-json"}
	for _, m := range staging {
		args = append(args, modVersion(m, v0))
	}
	if _, err := b.goOutput(ctx, "", args...); err == nil {
		return nil
	}
	for _, m := range staging {
		if _, err := b.download(ctx, m, v0); err != nil {
			return fmt.Errorf("building Kubernetes %s needs %s: %w", version, modVersion(m, v0), err)
		}
	}
	return nil
}

// Releases lists the minors of Kubernetes releases the Go module proxy
// lists, newest first, each as the request for its newest patch (the
// proxy's list may lag behind what it serves).
func (b *Builder) Releases(ctx context.Context) ([]versions.Selector, error) {
	out, err := b.goOutput(ctx, "", "list", "-m", "-versions", KubeAPIServer.Module)
	if err != nil {
		return nil, fmt.Errorf("asking the Go module proxy which Kubernetes versions it lists: %s", firstLine(err.Error()))
	}
	newest := map[[2]int]versions.Version{}
	for _, text := range strings.Fields(string(out))[1:] {
		if semver.Prerelease(text) != "" || !strings.HasPrefix(text, "v1.") {
			continue
		}
		v, err := versions.Parse(text)
		if err != nil {
			continue
		}
		key := [2]int{v.Major(), v.Minor()}
		if cur, ok := newest[key]; !ok || cur.Less(v) {
			newest[key] = v
		}
	}
	latest := make([]versions.Version, 0, len(newest))
	for _, v := range newest {
		latest = append(latest, v)
	}
	slices.SortFunc(latest, func(a, b versions.Version) int { return b.Compare(a) })
	minors := make([]versions.Selector, len(latest))
	for i, v := range latest {
		minors[i] = versions.MinorOf(v)
	}
	return minors, nil
}

// modVersion is module@v<version>, as the go command names a module version.
func modVersion(module string, version versions.Version) string {
	return module + "@v" + version.String()
}

// Commit returns the git commit module@version was tagged from, as the Go
// module proxy's metadata (Origin.Hash) gives it, or "" when it gives none.
func (b *Builder) Commit(ctx context.Context, module string, version versions.Version) string {
	out, err := b.goOutput(ctx, "", "mod", "download", "-json", modVersion(module, version))
	if err != nil {
		return ""
	}
	var res struct{ Origin struct{ Hash string } }
	if json.Unmarshal(out, &res) != nil {
		return ""
	}
	return res.Origin.Hash
}

// download fetches module@version into the module cache and returns the
// path of its go.mod there. The error says why the proxy would not serve
// it (downloadError).
func (b *Builder) download(ctx context.Context, module string, version versions.Version) (string, error) {
	out, err := b.goOutput(ctx, "", "mod", "download", "-json", modVersion(module, version))
	var res struct{ GoMod, Error string }
	if jsonErr := json.Unmarshal(out, &res); jsonErr == nil && res.Error != "" {
		return "", b.downloadError(ctx, module, version, errors.New(res.Error))
	}
	if err != nil {
		return "", b.downloadError(ctx, module, version, err)
	}
	return res.GoMod, nil
}

// downloadError explains a failed module download: an unreachable proxy, a
// version that does not exist, or one the proxy lists but will not serve.
func (b *Builder) downloadError(ctx context.Context, module string, version versions.Version, err error) error {
	proxy, _ := b.goOutput(ctx, "", "env", "GOPROXY")
	where := fmt.Sprintf("the Go module proxy (GOPROXY=%s)", strings.TrimSpace(string(proxy)))
	msg := err.Error()
	if unreachable(msg) {
		return fmt.Errorf("cannot reach %s to download %s@v%s: %s; check GOPROXY and the network", where, module, version, firstLine(msg))
	}
	if !b.exists(ctx, module, version) {
		return fmt.Errorf("%s has no version v%s on %s", module, version, where)
	}
	if strings.Contains(msg, "403") || strings.Contains(msg, "not available") {
		return fmt.Errorf("%s lists %s@v%s but refuses to serve it (%s)", where, module, version, firstLine(msg))
	}
	return fmt.Errorf("downloading %s@v%s from %s: %w", module, version, where, err)
}

// exists reports whether the proxy knows module@version (its .info), which
// it may while still refusing to serve the zip.
func (b *Builder) exists(ctx context.Context, module string, version versions.Version) bool {
	_, err := b.goOutput(ctx, "", "list", "-m", "-json", modVersion(module, version))
	return err == nil
}

// unreachable reports whether a go command's error means the proxy could
// not be asked at all.
func unreachable(msg string) bool {
	for _, s := range []string{"dial tcp", "no such host", "i/o timeout", "connection refused", "TLS handshake", "network is unreachable", "disabled by GOPROXY=off", "context deadline exceeded"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// goOutput runs the go command in dir (outside any module when empty) and
// returns its standard output; the error carries its standard error.
func (b *Builder) goOutput(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Env = os.Environ()
	if dir == "" {
		dir = os.TempDir()
		cmd.Env = append(cmd.Env, "GO111MODULE=on", "GOFLAGS=-mod=mod")
	}
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, errors.New(strings.TrimSpace(stderr.String() + " " + err.Error()))
	}
	return out, nil
}

// firstLine is s up to its first newline, for errors and output quoted in
// a one-line message.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
