package binaries

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/mod/semver"
)

// VersionEnv is the environment variable that names the Kubernetes version
// of the control plane: make, the kubeharness CLI and the e2e suite's
// providers all read it (through EnvRequest or RequestFrom).
const VersionEnv = "K8S_VERSION"

// Where a Request came from, besides VersionEnv.
const (
	// SourceFlag is a command's --version flag.
	SourceFlag = "--version"
	// SourceArg is a command's VERSION argument.
	SourceArg = "VERSION argument"
	// SourceDefault is the default in versions.yaml, used when nothing else
	// names a version.
	SourceDefault = LockfileName + " default"
)

// Request is a Kubernetes version as a user gave it, and where it came
// from, so that an error can say both.
type Request struct {
	// Value is what was typed: "" (versions.yaml's default), a minor
	// ("1.36", "1.36.x", "v1.36") or a patch ("1.36.4", "v1.36.4").
	Value string
	// Source is where Value came from: VersionEnv, SourceFlag, SourceArg
	// or SourceDefault.
	Source string
}

// EnvRequest is what $K8S_VERSION asks for.
func EnvRequest() Request { return Request{Value: os.Getenv(VersionEnv), Source: VersionEnv} }

// RequestFrom picks what a command is asked for, the most specific source
// first: the command line (its --version flag and its VERSION argument,
// which must agree), then $K8S_VERSION. When all are empty the Request is
// empty, which Resolve turns into versions.yaml's default. The error, a
// flag and an argument that disagree, is a usage error.
func RequestFrom(flag, arg string) (Request, error) {
	flag, arg = strings.TrimSpace(flag), strings.TrimSpace(arg)
	switch {
	case flag != "" && arg != "" && normalize(flag) != normalize(arg):
		return Request{}, fmt.Errorf("the VERSION argument %s and --version %s disagree: give one of them", arg, flag)
	case arg != "":
		return Request{Value: arg, Source: SourceArg}, nil
	case flag != "":
		return Request{Value: flag, Source: SourceFlag}, nil
	}
	return EnvRequest(), nil
}

// Explicit reports whether the request names a version, rather than
// leaving it to versions.yaml's default.
func (r Request) Explicit() bool { return strings.TrimSpace(r.Value) != "" }

// String names the request as the user gave it: "K8S_VERSION=1.36",
// "--version=1.36", "argument 1.36".
func (r Request) String() string {
	switch {
	case r.Source == VersionEnv || strings.HasPrefix(r.Source, "-"):
		return r.Source + "=" + r.Value
	case r.Source == "":
		return "version " + r.Value
	}
	return r.Source + " " + r.Value
}

// with says how to ask for v the way r was asked.
func (r Request) with(v string) string {
	switch {
	case r.Source == VersionEnv:
		return VersionEnv + "=" + v
	case strings.HasPrefix(r.Source, "-"):
		return r.Source + "=" + v
	case r.Source == SourceArg:
		return "the VERSION argument " + v
	case r.Source == SourceDefault:
		return "default: " + v + " in " + LockfileName
	}
	return v
}

// drop says how to stop asking for a version the way r asked.
func (r Request) drop() string {
	switch {
	case r.Source == VersionEnv:
		return "unset " + VersionEnv
	case strings.HasPrefix(r.Source, "-"):
		return "drop " + r.Source
	case r.Source == SourceArg:
		return "drop the VERSION argument"
	}
	return "ask for no version"
}

// normalize is a request's canonical text: no "v", no ".x".
func normalize(v string) string {
	return strings.TrimSuffix(TrimV(v), ".x")
}

// spec is a request that parsed: a patch ("1.36.4") or a minor ("1.36").
type spec struct {
	version string
	minor   bool
}

var (
	patchRE = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)
	minorRE = regexp.MustCompile(`^[0-9]+\.[0-9]+$`)
)

// parse checks the syntax of a request; it asks nobody. A pre-release's
// error says what to ask for instead; other errors need a hint.
func parse(r Request) (s spec, prerelease bool, err error) {
	v := normalize(r.Value)
	switch {
	case patchRE.MatchString(v) && semver.IsValid("v"+v):
		return spec{version: v}, false, nil
	case minorRE.MatchString(v) && semver.IsValid("v"+v):
		return spec{version: v, minor: true}, false, nil
	case semver.IsValid("v"+v) && (semver.Prerelease("v"+v) != "" || semver.Build("v"+v) != ""):
		canonical := "v" + v
		release := strings.TrimPrefix(strings.TrimSuffix(strings.TrimSuffix(semver.Canonical(canonical), semver.Build(canonical)), semver.Prerelease(canonical)), "v")
		minor := strings.TrimPrefix(semver.MajorMinor(canonical), "v")
		return spec{}, true, fmt.Errorf("%s is a pre-release, and kubeharness builds Kubernetes releases only: ask for %s, or %s for the newest %s patch the Go module proxy serves",
			r, r.with(release), r.with(minor), minor)
	}
	return spec{}, false, fmt.Errorf("%s is not a Kubernetes version: write a patch such as 1.37.1 or a minor such as 1.37 (its newest patch the Go module proxy serves), with or without a leading v", r)
}

// Proxy is what the Resolver asks the Go module proxy about
// k8s.io/kubernetes. Builder implements it with the go command; tests
// substitute their own.
type Proxy interface {
	// Lists reports whether the proxy knows k8s.io/kubernetes at version
	// (a patch such as "1.37.2"), which it may while refusing to serve it.
	// The error means the proxy could not be asked.
	Lists(ctx context.Context, version string) (bool, error)
	// Serves returns nil when k8s.io/kubernetes at version and every
	// staging module it builds with download, and otherwise says why not.
	Serves(ctx context.Context, version string) error
}

// Resolver turns what a user asked for into a Kubernetes patch version
// that can be built. It is the one place that does: make (through
// `kubeharness bins`), every kubeharness command and the e2e suite's
// providers use it.
type Resolver struct {
	Lock  *Lockfile
	Proxy Proxy
	// Out receives notes (what a minor resolved to, which patches were
	// skipped and why); nil discards them.
	Out io.Writer

	mu     sync.Mutex
	newest map[string]newestResult
}

type newestResult struct {
	version string
	err     error
}

// NewResolver reads versions.yaml below root and asks the Go module proxy
// through the go command. An empty root (outside the kubeharness
// repository) means no versions.yaml: a patch must be one the proxy serves,
// a minor is its newest patch the proxy serves, and a request must name a
// version.
func NewResolver(root string, out io.Writer) (*Resolver, error) {
	b := &Builder{Root: root, Out: out}
	lock, err := b.lockfile()
	if err != nil {
		return nil, err
	}
	return &Resolver{Lock: lock, Proxy: b, Out: out}, nil
}

// ResolveVersion is Resolver.Resolve for callers holding a bare string: v
// counts as $K8S_VERSION's value when it equals it, else as a --version
// flag's.
func (b *Builder) ResolveVersion(ctx context.Context, lock *Lockfile, v string) (string, error) {
	req := Request{Value: v, Source: SourceFlag}
	if v == os.Getenv(VersionEnv) {
		req.Source = VersionEnv
	}
	return (&Resolver{Lock: lock, Proxy: b, Out: b.out()}).Resolve(ctx, req)
}

// EtcdVersion is the lockfile's etcd for version, or else the etcd server
// module that version of Kubernetes itself depends on, as its go.mod
// requires it.
func (b *Builder) EtcdVersion(ctx context.Context, lock *Lockfile, version string) (string, error) {
	if e, ok := lock.Lookup(version); ok {
		return e.Etcd, nil
	}
	mod, err := b.readKubeGoMod(ctx, version)
	if err != nil {
		return "", err
	}
	if mod.etcd == "" {
		return "", fmt.Errorf("the go.mod of Kubernetes %s names no %s; add the version to %s with an etcd version", version, Etcd.Module, LockfileName)
	}
	fmt.Fprintf(b.out(), "Kubernetes %s is not in %s; building the etcd it depends on, %s\n", version, LockfileName, mod.etcd)
	return TrimV(mod.etcd), nil
}

// out is where the Resolver's notes go: Out, or nowhere.
func (r *Resolver) out() io.Writer {
	if r.Out == nil {
		return io.Discard
	}
	return r.Out
}

// Resolve turns a request into a patch version that can be built:
//   - an empty request is versions.yaml's default;
//   - a patch ("1.37.1", "v1.37.1") listed in versions.yaml is taken as it
//     is, without asking the proxy; any other patch must be one the proxy
//     serves completely (k8s.io/kubernetes and its staging modules);
//   - a minor ("1.37", "1.37.x", "v1.37") is its newest patch the proxy
//     serves completely; patches the proxy lists but refuses are skipped
//     with a note. Offline, a minor versions.yaml pins a patch of falls
//     back to that patch, with a note;
//   - pre-releases and anything else are refused.
//
// Every error names the request with its source ("K8S_VERSION=9.99"), says
// what is wrong, and lists the versions that can be built: those in
// versions.yaml and the newest patch the proxy serves of each of their
// minors.
func (r *Resolver) Resolve(ctx context.Context, req Request) (string, error) {
	if !req.Explicit() {
		if r.Lock.Default == "" {
			return "", fmt.Errorf("no Kubernetes version asked for, and no %s to take a default from: name one, a patch such as 1.37.1 or a minor such as 1.37 (its newest patch the Go module proxy serves)", LockfileName)
		}
		req = Request{Value: r.Lock.Default, Source: SourceDefault}
	}
	s, prerelease, err := parse(req)
	if prerelease {
		return "", err
	}
	if err != nil {
		return "", fmt.Errorf("%w%s", err, r.lockedHint(req))
	}
	if !s.minor {
		if _, ok := r.Lock.Lookup(s.version); ok {
			return s.version, nil
		}
		listed, err := r.Proxy.Lists(ctx, s.version)
		if err != nil {
			return "", fmt.Errorf("%s: cannot ask the Go module proxy for Kubernetes %s: %v%s", req, s.version, err, r.lockedHint(req))
		}
		if !listed {
			return "", fmt.Errorf("%s: the Go module proxy has no Kubernetes %s%s", req, s.version, r.hint(ctx, req))
		}
		if err := r.Proxy.Serves(ctx, s.version); err != nil {
			return "", fmt.Errorf("%s: Kubernetes %s cannot be built: %v%s", req, s.version, err, r.hint(ctx, req))
		}
		return s.version, nil
	}
	v, err := r.newestServed(ctx, s.version, r.out())
	if err != nil {
		var offline *proxyUnreachableError
		if errors.As(err, &offline) {
			return "", fmt.Errorf("%s: %v%s", req, err, r.lockedHint(req))
		}
		return "", fmt.Errorf("%s: %v%s", req, err, r.hint(ctx, req))
	}
	fmt.Fprintf(r.out(), "%s resolves to %s\n", req, v)
	return v, nil
}

// proxyUnreachableError is a minor the proxy could not be asked about.
type proxyUnreachableError struct{ err error }

func (e *proxyUnreachableError) Error() string {
	return "cannot ask the Go module proxy for its patches: " + e.err.Error()
}

// newestServed finds the newest patch of minor that can be built. Patches
// are probed one by one, since the proxy's version list lags behind what it
// serves: upwards from the newest patch versions.yaml pins (which is taken
// as buildable), else from .0. Results are kept for the Resolver's life.
func (r *Resolver) newestServed(ctx context.Context, minor string, notes io.Writer) (string, error) {
	r.mu.Lock()
	if res, ok := r.newest[minor]; ok {
		r.mu.Unlock()
		return res.version, res.err
	}
	r.mu.Unlock()
	v, err := r.probeMinor(ctx, minor, notes)
	if ctx.Err() == nil {
		r.mu.Lock()
		if r.newest == nil {
			r.newest = map[string]newestResult{}
		}
		r.newest[minor] = newestResult{v, err}
		r.mu.Unlock()
	}
	return v, err
}

func (r *Resolver) probeMinor(ctx context.Context, minor string, notes io.Writer) (string, error) {
	locked := -1
	for _, e := range r.Lock.Versions {
		if p, ok := patchOf(e.Kubernetes, minor); ok && p > locked {
			locked = p
		}
	}
	var candidates []string
	if locked >= 0 {
		candidates = append(candidates, fmt.Sprintf("%s.%d", minor, locked))
	}
	for p := locked + 1; ; p++ {
		v := fmt.Sprintf("%s.%d", minor, p)
		listed, err := r.Proxy.Lists(ctx, v)
		if err != nil {
			if locked < 0 {
				return "", &proxyUnreachableError{err}
			}
			fmt.Fprintf(notes, "cannot ask the Go module proxy whether Kubernetes %s exists (%v): looking no further than %s\n",
				v, err, candidates[len(candidates)-1])
			break
		}
		if !listed {
			break
		}
		candidates = append(candidates, v)
	}
	for i := len(candidates) - 1; i >= 0; i-- {
		v := candidates[i]
		if _, ok := r.Lock.Lookup(v); ok {
			return v, nil
		}
		if err := r.Proxy.Serves(ctx, v); err != nil {
			fmt.Fprintf(notes, "skipping Kubernetes %s: %v\n", v, err)
			continue
		}
		return v, nil
	}
	if len(candidates) == 0 {
		return "", fmt.Errorf("the Go module proxy serves no release of Kubernetes %s", minor)
	}
	return "", fmt.Errorf("the Go module proxy lists Kubernetes %s up to %s but serves none of them completely", minor, candidates[len(candidates)-1])
}

// patchOf returns the patch number of version when it belongs to minor.
func patchOf(version, minor string) (int, bool) {
	rest, ok := strings.CutPrefix(version, minor+".")
	if !ok {
		return 0, false
	}
	p, err := strconv.Atoi(rest)
	return p, err == nil && p >= 0
}

// Buildable lists the versions that can be built, newest first: those
// versions.yaml pins and the newest patch the proxy serves of each of their
// minors. Without the proxy it is versions.yaml's alone.
func (r *Resolver) Buildable(ctx context.Context) []string {
	return r.BuildableOf(ctx)
}

// BuildableOf is Buildable with the newest patch the proxy serves of each
// of minors ("1.37") added.
func (r *Resolver) BuildableOf(ctx context.Context, extraMinors ...string) []string {
	seen := map[string]bool{}
	var minors []string
	addMinor := func(m string) {
		if m != "" && !seen["minor "+m] {
			seen["minor "+m] = true
			minors = append(minors, m)
		}
	}
	for _, e := range r.Lock.Versions {
		seen[e.Kubernetes] = true
		addMinor(strings.TrimPrefix(semver.MajorMinor("v"+e.Kubernetes), "v"))
	}
	for _, m := range extraMinors {
		addMinor(m)
	}
	newest := make([]string, len(minors))
	var wg sync.WaitGroup
	for i, m := range minors {
		wg.Add(1)
		go func() {
			defer wg.Done()
			newest[i], _ = r.newestServed(ctx, m, io.Discard)
		}()
	}
	wg.Wait()
	for _, v := range newest {
		if v != "" {
			seen[v] = true
		}
	}
	var out []string
	for v := range seen {
		if !strings.HasPrefix(v, "minor ") {
			out = append(out, v)
		}
	}
	sortVersionsDesc(out)
	return out
}

func sortVersionsDesc(vs []string) {
	sort.Slice(vs, func(i, j int) bool { return semver.Compare("v"+vs[i], "v"+vs[j]) > 0 })
}

// hint lists what can be built and how to ask for it.
func (r *Resolver) hint(ctx context.Context, req Request) string {
	return r.hintFor(req, r.Buildable(ctx), "the versions in "+LockfileName+" and the newest patch the Go module proxy serves of each of their minors")
}

// lockedHint is hint without asking the proxy.
func (r *Resolver) lockedHint(req Request) string {
	var vs []string
	for _, e := range r.Lock.Versions {
		vs = append(vs, e.Kubernetes)
	}
	sortVersionsDesc(vs)
	return r.hintFor(req, vs, "those in "+LockfileName+"; a minor means its newest patch the Go module proxy serves")
}

func (r *Resolver) hintFor(req Request, versions []string, what string) string {
	if len(versions) == 0 {
		return ""
	}
	minor := strings.TrimPrefix(semver.MajorMinor("v"+versions[0]), "v")
	return fmt.Sprintf(". Versions that can be built: %s (%s); ask for one of them, e.g. %s, or for a minor, e.g. %s",
		strings.Join(versions, ", "), what, req.with(versions[0]), req.with(minor))
}
