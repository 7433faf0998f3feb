package versions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Proxy is what the Resolver asks the Go module proxy about
// k8s.io/kubernetes. binaries.Builder implements it with the go command;
// tests substitute their own.
type Proxy interface {
	// Lists reports whether the proxy knows k8s.io/kubernetes at v, which
	// it may while refusing to serve it. The error means the proxy could
	// not be asked.
	Lists(ctx context.Context, v Version) (bool, error)
	// Serves returns nil when k8s.io/kubernetes at v and every staging
	// module it builds with download, and otherwise says why not.
	Serves(ctx context.Context, v Version) error
}

// Resolver turns what a user asked for into a Kubernetes patch version
// that can be built. It is the one place that does: every kubeharness
// command and the e2e suite's providers use it (binaries.NewResolver
// makes one that asks the Go module proxy through the go command).
type Resolver struct {
	Lock  *Lockfile
	Proxy Proxy
	// Out receives notes (what a minor resolved to, which patches were
	// skipped and why); nil discards them.
	Out io.Writer

	mu     sync.Mutex
	newest map[minorKey]newestResult
}

// minorKey is a minor, as the Resolver remembers what it found of it.
type minorKey struct{ major, minor int }

func keyOf(v Version) minorKey { return minorKey{v.major, v.minor} }

type newestResult struct {
	v   Version
	err error
}

// out is where the Resolver's notes go: Out, or nowhere.
func (r *Resolver) out() io.Writer {
	if r.Out == nil {
		return io.Discard
	}
	return r.Out
}

// Resolve turns a request into a patch version that can be built:
//   - a request for nothing is versions.yaml's default;
//   - a patch listed in versions.yaml is taken as it is, without asking
//     the proxy; any other patch must be one the proxy serves completely
//     (k8s.io/kubernetes and its staging modules);
//   - a minor is its newest patch the proxy serves completely; patches the
//     proxy lists but refuses are skipped with a note. Offline, a minor
//     versions.yaml pins a patch of falls back to that patch, with a note.
//
// Every error names the request with its source ("K8S_VERSION=9.99"), says
// what is wrong, and lists the versions that can be built: those in
// versions.yaml and the newest patch the proxy serves of each of their
// minors.
func (r *Resolver) Resolve(ctx context.Context, sel Selector) (Version, error) {
	if !sel.Explicit() {
		if r.Lock.Default.IsZero() {
			return Version{}, fmt.Errorf("no Kubernetes version asked for, and no %s to take a default from: name one, a patch such as 1.37.1 or a minor such as 1.37 (its newest patch the Go module proxy serves)", LockfileName)
		}
		sel = Exactly(r.Lock.Default)
		sel.from = SourceDefault
	}
	if v, ok := sel.Exact(); ok {
		if _, ok := r.Lock.Lookup(v); ok {
			return v, nil
		}
		listed, err := r.Proxy.Lists(ctx, v)
		if err != nil {
			return Version{}, fmt.Errorf("%s: cannot ask the Go module proxy for Kubernetes %s: %v%s", sel, v, err, r.Lock.hint(sel))
		}
		if !listed {
			return Version{}, fmt.Errorf("%s: the Go module proxy has no Kubernetes %s%s", sel, v, r.hint(ctx, sel))
		}
		if err := r.Proxy.Serves(ctx, v); err != nil {
			return Version{}, fmt.Errorf("%s: Kubernetes %s cannot be built: %v%s", sel, v, err, r.hint(ctx, sel))
		}
		return v, nil
	}
	v, err := r.newestServed(ctx, keyOf(sel.v), r.out())
	if err != nil {
		var offline *proxyUnreachableError
		if errors.As(err, &offline) {
			return Version{}, fmt.Errorf("%s: %v%s", sel, err, r.Lock.hint(sel))
		}
		return Version{}, fmt.Errorf("%s: %v%s", sel, err, r.hint(ctx, sel))
	}
	fmt.Fprintf(r.out(), "%s resolves to %s\n", sel, v)
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
func (r *Resolver) newestServed(ctx context.Context, minor minorKey, notes io.Writer) (Version, error) {
	r.mu.Lock()
	if res, ok := r.newest[minor]; ok {
		r.mu.Unlock()
		return res.v, res.err
	}
	r.mu.Unlock()
	v, err := r.probeMinor(ctx, minor, notes)
	if ctx.Err() == nil {
		r.mu.Lock()
		if r.newest == nil {
			r.newest = map[minorKey]newestResult{}
		}
		r.newest[minor] = newestResult{v, err}
		r.mu.Unlock()
	}
	return v, err
}

func (r *Resolver) probeMinor(ctx context.Context, minor minorKey, notes io.Writer) (Version, error) {
	locked := -1
	for _, e := range r.Lock.Versions {
		if keyOf(e.Kubernetes) == minor && e.Kubernetes.patch > locked {
			locked = e.Kubernetes.patch
		}
	}
	var candidates []Version
	if locked >= 0 {
		candidates = append(candidates, New(minor.major, minor.minor, locked))
	}
	for p := locked + 1; ; p++ {
		v := New(minor.major, minor.minor, p)
		listed, err := r.Proxy.Lists(ctx, v)
		if err != nil {
			if locked < 0 {
				return Version{}, &proxyUnreachableError{err}
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
	name := fmt.Sprintf("%d.%d", minor.major, minor.minor)
	if len(candidates) == 0 {
		return Version{}, fmt.Errorf("the Go module proxy serves no release of Kubernetes %s", name)
	}
	return Version{}, fmt.Errorf("the Go module proxy lists Kubernetes %s up to %s but serves none of them completely", name, candidates[len(candidates)-1])
}

// Buildable lists the versions that can be built, newest first: those
// versions.yaml pins and the newest patch the proxy serves of each of their
// minors. Without the proxy it is versions.yaml's alone.
func (r *Resolver) Buildable(ctx context.Context) []Version {
	return r.BuildableOf(ctx)
}

// BuildableOf is Buildable with the newest patch the proxy serves of the
// minor of each of sels added (MinorOf(v), or what a user asked for);
// selectors that name no version add nothing.
func (r *Resolver) BuildableOf(ctx context.Context, sels ...Selector) []Version {
	seen := map[Version]bool{}
	seenMinor := map[minorKey]bool{}
	var minors []minorKey
	addMinor := func(m minorKey) {
		if !seenMinor[m] {
			seenMinor[m] = true
			minors = append(minors, m)
		}
	}
	for _, e := range r.Lock.Versions {
		seen[e.Kubernetes] = true
		addMinor(keyOf(e.Kubernetes))
	}
	for _, s := range sels {
		if s.Explicit() {
			addMinor(keyOf(s.v))
		}
	}
	newest := make([]Version, len(minors))
	var wg sync.WaitGroup
	for i, m := range minors {
		wg.Go(func() {
			newest[i], _ = r.newestServed(ctx, m, io.Discard)
		})
	}
	wg.Wait()
	for _, v := range newest {
		if !v.IsZero() {
			seen[v] = true
		}
	}
	out := make([]Version, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sortDesc(out)
	return out
}

// hint lists what can be built and how to ask for it.
func (r *Resolver) hint(ctx context.Context, sel Selector) string {
	return hintFor(sel, r.Buildable(ctx), "the versions in "+LockfileName+" and the newest patch the Go module proxy serves of each of their minors")
}
