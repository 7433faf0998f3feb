// Package goproxy asks the Go module proxy, through the go command, about
// Kubernetes and etcd: which versions it lists and serves completely
// (Client implements versions.Proxy, so a versions.Resolver asks it), the
// minors it has releases of, the git commit a version was tagged from,
// and what k8s.io/kubernetes's go.mod says (the etcd it depends on, its
// staging modules). It builds nothing: the Go module build
// (binaries/gobuild) asks it.
package goproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"

	"golang.org/x/mod/semver"

	"github.com/kubeharness/kubeharness/harness/binaries/component"
	"github.com/kubeharness/kubeharness/harness/versions"
)

// Client asks the Go module proxy through the go command. Its zero value is
// ready; it remembers what it was told (go.mod files, commits), so that a
// Resolver probing patches and a build of several components ask once.
// It may be used from several goroutines at once.
type Client struct {
	mu sync.Mutex
	// commits memoizes Commit, by module@version.
	commits map[string]string
	// kubeGoMods memoizes KubeGoMod, by Kubernetes version.
	kubeGoMods map[versions.Version]*KubeGoMod
}

var _ versions.Proxy = &Client{}

// Lists implements versions.Proxy with `go list -m`, which asks the proxy
// for the version's .info.
func (c *Client) Lists(ctx context.Context, version versions.Version) (bool, error) {
	_, err := Go(ctx, "", "list", "-m", "-json", ModVersion(component.KubeAPIServer.Module, version))
	if err == nil {
		return true, nil
	}
	if Unreachable(err.Error()) {
		return false, errors.New(FirstLine(err.Error()))
	}
	return false, nil
}

// Serves implements versions.Proxy: it downloads k8s.io/kubernetes at
// version and every staging module it builds with, at the matching v0
// version: the proxy sometimes serves the one and refuses some of the
// others.
func (c *Client) Serves(ctx context.Context, version versions.Version) error {
	mod, err := c.KubeGoMod(ctx, version)
	if err != nil {
		return err
	}
	if mod.StagingErr != nil {
		return mod.StagingErr
	}
	v0 := StagingVersion(version)
	// One go command for them all; a module that fails is asked again
	// alone, for its error.
	args := []string{"mod", "download", "-json"}
	for _, m := range mod.Staging {
		args = append(args, ModVersion(m, v0))
	}
	if _, err := Go(ctx, "", args...); err == nil {
		return nil
	}
	for _, m := range mod.Staging {
		if _, err := c.Download(ctx, m, v0); err != nil {
			return fmt.Errorf("building Kubernetes %s needs %s: %w", version, ModVersion(m, v0), err)
		}
	}
	return nil
}

// Releases lists the minors of Kubernetes releases the Go module proxy
// lists, newest first, each as the request for its newest patch (the
// proxy's list may lag behind what it serves).
func (c *Client) Releases(ctx context.Context) ([]versions.Selector, error) {
	out, err := Go(ctx, "", "list", "-m", "-versions", component.KubeAPIServer.Module)
	if err != nil {
		return nil, fmt.Errorf("asking the Go module proxy which Kubernetes versions it lists: %s", FirstLine(err.Error()))
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

// Commit returns the git commit module@version was tagged from, as the Go
// module proxy's metadata (Origin.Hash) gives it, or "" when it gives none;
// it asks once per module version.
func (c *Client) Commit(ctx context.Context, module string, version versions.Version) string {
	key := ModVersion(module, version)
	c.mu.Lock()
	v, ok := c.commits[key]
	c.mu.Unlock()
	if ok {
		return v
	}
	if out, err := Go(ctx, "", "mod", "download", "-json", key); err == nil {
		var res struct{ Origin struct{ Hash string } }
		if json.Unmarshal(out, &res) == nil {
			v = res.Origin.Hash
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.commits == nil {
		c.commits = map[string]string{}
	}
	c.commits[key] = v
	return v
}

// Download fetches module@version into the module cache and returns the
// path of its go.mod there. The error says why the proxy would not serve
// it: an unreachable proxy, a version that does not exist, or one the
// proxy lists but will not serve.
func (c *Client) Download(ctx context.Context, module string, version versions.Version) (string, error) {
	out, err := Go(ctx, "", "mod", "download", "-json", ModVersion(module, version))
	var res struct{ GoMod, Error string }
	if jsonErr := json.Unmarshal(out, &res); jsonErr == nil && res.Error != "" {
		err = errors.New(res.Error)
	}
	if err == nil {
		return res.GoMod, nil
	}
	proxy, _ := Go(ctx, "", "env", "GOPROXY")
	where := fmt.Sprintf("the Go module proxy (GOPROXY=%s)", strings.TrimSpace(string(proxy)))
	msg := err.Error()
	if Unreachable(msg) {
		return "", fmt.Errorf("cannot reach %s to download %s@v%s: %s; check GOPROXY and the network", where, module, version, FirstLine(msg))
	}
	if _, listErr := Go(ctx, "", "list", "-m", "-json", ModVersion(module, version)); listErr != nil {
		return "", fmt.Errorf("%s has no version v%s on %s", module, version, where)
	}
	if strings.Contains(msg, "403") || strings.Contains(msg, "not available") {
		return "", fmt.Errorf("%s lists %s@v%s but refuses to serve it (%s)", where, module, version, FirstLine(msg))
	}
	return "", fmt.Errorf("downloading %s@v%s from %s: %w", module, version, where, err)
}

// KubeGoMod downloads k8s.io/kubernetes at version into the module cache
// and returns what its go.mod says. Each version's go.mod is downloaded
// and parsed once per Client; a failure is not remembered, so the next
// call tries again.
func (c *Client) KubeGoMod(ctx context.Context, version versions.Version) (*KubeGoMod, error) {
	c.mu.Lock()
	m, ok := c.kubeGoMods[version]
	c.mu.Unlock()
	if ok {
		return m, nil
	}
	path, err := c.Download(ctx, component.KubeAPIServer.Module, version)
	if err != nil {
		return nil, err
	}
	if path == "" {
		return nil, fmt.Errorf("go mod download named no go.mod for %s@v%s", component.KubeAPIServer.Module, version)
	}
	if m, err = ParseKubeGoMod(path, version); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kubeGoMods == nil {
		c.kubeGoMods = map[versions.Version]*KubeGoMod{}
	}
	c.kubeGoMods[version] = m
	return m, nil
}

// ModVersion is module@v<version>, as the go command names a module version.
func ModVersion(module string, version versions.Version) string {
	return module + "@v" + version.String()
}

// Unreachable reports whether a go command's error means the proxy could
// not be asked at all.
func Unreachable(msg string) bool {
	for _, s := range []string{"dial tcp", "no such host", "i/o timeout", "connection refused", "TLS handshake", "network is unreachable", "disabled by GOPROXY=off", "context deadline exceeded"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// Go runs the go command in dir (outside any module when empty) and
// returns its standard output; the error carries its standard error.
func Go(ctx context.Context, dir string, args ...string) ([]byte, error) {
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

// FirstLine is s up to its first newline, for errors and output quoted in
// a one-line message.
func FirstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
