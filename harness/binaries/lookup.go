package binaries

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"

	"github.com/kubeharness/kubeharness/harness/binaries/store"
	"github.com/kubeharness/kubeharness/harness/internal/clihint"
	"github.com/kubeharness/kubeharness/harness/internal/ownership"
	"github.com/kubeharness/kubeharness/harness/versions"
)

// DefaultAssetsDir is where controller-runtime's envtest looks for its
// binaries when nothing names a directory.
const DefaultAssetsDir = "/usr/local/kubebuilder/bin"

// Named is one binary named by its path, and who named it.
type Named struct {
	Path string
	// By is who named it ("ControlPlane.Etcd.Path"), for messages and
	// the fix they give.
	By string
}

// Where says where Lookup looks for the control-plane binaries and what
// they must be. Its zero value looks where controller-runtime's envtest
// looks, then in setup-envtest's store, and runs nothing.
type Where struct {
	// Components are the binaries wanted; empty means etcd and
	// kube-apiserver (DefaultComponents).
	Components []Component
	// Named name binaries one by one, by component name (a ControlPlane's
	// Etcd.Path and APIServer.Path): each wins over every directory.
	Named map[string]Named
	// Dir is a directory the caller names (Options.BinaryDir, say); it
	// wins over the environment. DirBy is who named it, for messages
	// ("Options.BinaryDir"; empty: "the directory asked for").
	Dir, DirBy string
	// AssetsDirectory is controller-runtime's BinaryAssetsDirectory:
	// looked in after $KUBEBUILDER_ASSETS.
	AssetsDirectory string
	// Store is the bin-dir of the store looked in last, laid out as
	// setup-envtest lays out its own; empty means setup-envtest's
	// (DefaultStoreDir).
	Store string
	// StoreOnly looks in the store alone (`kubeharness bins use -i`).
	StoreOnly bool
	// Version is the version asked for: the binaries found must report it
	// (a minor: any of its patches); in the store it picks the newest
	// version directory it matches. A selector that names no version
	// takes any.
	Version versions.Selector
	// Resolve, when set, turns Version into the one version whose
	// directory of the store is looked in (versions.Resolver.Resolve);
	// it is called only when the lookup comes to the store.
	Resolve func(context.Context, versions.Selector) (versions.Version, error)
	// Check runs each binary's version flag (CheckBinaries) before the
	// binaries are taken; a Version that names one, or Resolve, implies
	// it. Without it only the binaries' files are looked at.
	Check bool
}

// Found is where Lookup found the binaries.
type Found struct {
	// Dir is the one directory they all are in; empty when they were
	// named in several (Named, TEST_ASSET_*).
	Dir string
	// Paths are where each is, by component name: those asked for and
	// the other control-plane binaries (ControlPlaneNames) beside them.
	Paths map[string]string
	// From says where the directory came from ("KUBEBUILDER_ASSETS",
	// "the envtest binary store /home/me/.local/share/kubebuilder-envtest"),
	// for messages; empty when every binary was named.
	From string
	// Named are the components named one by one (Named, TEST_ASSET_*).
	Named []string
	// Version is the Kubernetes version they report, when they were
	// checked.
	Version versions.Version
}

// TestAssetEnv is the variable controller-runtime's envtest takes the path
// of the binary name from, spelled as it spells it: TEST_ASSET_KUBE_APISERVER
// for kube-apiserver.
func TestAssetEnv(name string) string {
	sanitized := nonAlnum.ReplaceAllString(strings.ToUpper(name), "_")
	return "TEST_ASSET_" + leadingDigits.ReplaceAllString(sanitized, "")
}

var (
	nonAlnum      = regexp.MustCompile(`[^A-Z0-9]+`)
	leadingDigits = regexp.MustCompile(`^[0-9]+`)
)

// Lookup finds the control-plane binaries, looking in this order, each
// binary where it is first named:
//  1. Named, one binary at a time;
//  2. Dir, a directory the caller names;
//  3. $TEST_ASSET_<NAME> (TestAssetEnv), one binary at a time;
//  4. $KUBEBUILDER_ASSETS;
//  5. AssetsDirectory;
//  6. /usr/local/kubebuilder/bin (DefaultAssetsDir), when it holds them
//     (and reports the Version asked for);
//  7. the Store: the directory of the version Resolve resolves to, or
//     else the newest one that holds them (and works, and reports the
//     Version asked for, when they are checked).
//
// Steps 1 to 5 are what someone named: what they name must be there and
// work. StoreOnly skips to step 7.
//
// Nothing found runs before the one trust rule passed (ownership.CheckRun):
// each binary, and what its directory holds of the others
// (ControlPlaneNames), belongs to the caller or root and no one else may
// write it, nor its directory and every directory above it (for a store,
// without exception up to the store's root). Every error names the source,
// the path, what is wrong and the fix.
func Lookup(ctx context.Context, w Where) (Found, error) {
	l := lookup{Where: w, components: w.Components}
	if len(l.components) == 0 {
		l.components = DefaultComponents
	}
	return l.find(ctx)
}

// lookup is one Lookup under way.
type lookup struct {
	Where
	components []Component
	found      Found
	// named are the binaries named one by one, by component name.
	named map[string]Named
	// checked is set once the binaries found ran for their versions.
	checked bool
}

// dirSource is the directory the binaries not named one by one come from.
type dirSource struct {
	dir string
	// from names the source ("KUBEBUILDER_ASSETS", "the envtest binary
	// store /s"), what the source and the directory.
	from, what string
	// strictRoot is the directory up to which the directories must be
	// private without exception (a store's root), or "".
	strictRoot string
}

func (l *lookup) find(ctx context.Context) (Found, error) {
	l.found = Found{Paths: map[string]string{}}
	l.named = map[string]Named{}
	if !l.StoreOnly {
		for _, c := range l.components {
			if n, ok := l.Named[c.Name]; ok && n.Path != "" {
				l.named[c.Name] = n
			} else if env := TestAssetEnv(c.Name); l.Dir == "" && os.Getenv(env) != "" {
				l.named[c.Name] = Named{Path: os.Getenv(env), By: env}
			}
		}
	}
	for _, c := range l.components {
		n, ok := l.named[c.Name]
		if !ok {
			continue
		}
		if !fileExists(n.Path) {
			return Found{}, notFound(c.Name, n.Path, n.By)
		}
		if err := refuse(n.By+" "+n.Path, provideFix(n.By, c.Name), "", n.Path); err != nil {
			return Found{}, err
		}
		l.found.Paths[c.Name] = n.Path
		l.found.Named = append(l.found.Named, c.Name)
	}
	src, err := l.directory(ctx)
	if err != nil {
		return Found{}, err
	}
	if src.dir != "" {
		for _, c := range l.unnamed() {
			if path := filepath.Join(src.dir, c.Name); !fileExists(path) {
				return Found{}, notFound(c.Name, path, src.from)
			}
		}
		paths := l.pathsIn(src.dir)
		refused := refuse(src.what, provideFix("", ""), src.strictRoot, paths...)
		if src.strictRoot != "" {
			refused = refuseStore(src.strictRoot, paths...)
		}
		if refused != nil {
			return Found{}, refused
		}
		for _, path := range paths {
			if _, taken := l.named[filepath.Base(path)]; !taken {
				l.found.Paths[filepath.Base(path)] = path
			}
		}
		l.found.From = src.from
	}
	for _, c := range l.components {
		if l.found.Paths[c.Name] == "" {
			return Found{}, notFound(c.Name, "", src.from)
		}
	}
	l.found.Dir = l.commonDir()
	if l.checks() && (!l.checked || len(l.named) > 0) {
		if err := l.check(ctx, src); err != nil {
			return Found{}, err
		}
	}
	return l.found, nil
}

// checks reports whether the binaries found are run for their versions.
func (l *lookup) checks() bool { return l.Check || l.Version.Explicit() || l.Resolve != nil }

// commonDir is the one directory every binary asked for is in, or "".
func (l *lookup) commonDir() string {
	dir := ""
	for _, c := range l.components {
		d := filepath.Dir(l.found.Paths[c.Name])
		if dir != "" && d != dir {
			return ""
		}
		dir = d
	}
	return dir
}

// directory picks the directory the binaries not named one by one are
// taken from (steps 2 to 7 of Lookup); none when every one was named and
// no directory is named either.
func (l *lookup) directory(ctx context.Context) (dirSource, error) {
	if l.StoreOnly {
		return l.inStore(ctx)
	}
	named := func(dir, by string) dirSource { return dirSource{dir: dir, from: by, what: by + " " + dir} }
	switch {
	case l.Dir != "":
		by := l.DirBy
		if by == "" {
			by = "the directory asked for"
		}
		return named(l.Dir, by), nil
	case os.Getenv(AssetsEnv) != "":
		return named(os.Getenv(AssetsEnv), AssetsEnv), nil
	case l.AssetsDirectory != "":
		return named(l.AssetsDirectory, "BinaryAssetsDirectory"), nil
	case len(l.named) == len(l.components):
		return dirSource{}, nil
	case l.holds(DefaultAssetsDir) && l.defaultDirWorks(ctx):
		from := "the default " + DefaultAssetsDir
		return dirSource{dir: DefaultAssetsDir, from: from, what: from}, nil
	}
	return l.inStore(ctx)
}

// holds reports whether dir holds every binary not named one by one.
func (l *lookup) holds(dir string) bool {
	for _, c := range l.unnamed() {
		if !fileExists(filepath.Join(dir, c.Name)) {
			return false
		}
	}
	return true
}

// defaultDirWorks reports whether /usr/local/kubebuilder/bin is taken: it
// is, unless the binaries are to be checked and do not work or report
// another version than the one asked for; then the store is looked in,
// since nobody named the default directory. Binaries there that others
// could change are taken, to be refused with the reason.
func (l *lookup) defaultDirWorks(ctx context.Context) bool {
	if !l.checks() || len(ownership.CheckRun(DefaultAssetsDir, l.pathsIn(DefaultAssetsDir)...)) > 0 {
		return true
	}
	got, err := CheckBinaries(ctx, DefaultAssetsDir, l.unnamed()...)
	if err != nil || !l.Version.Matches(got) {
		return false
	}
	l.checked, l.found.Version = true, got
	return true
}

// unnamed are the components not named one by one.
func (l *lookup) unnamed() []Component {
	var out []Component
	for _, c := range l.components {
		if _, ok := l.named[c.Name]; !ok {
			out = append(out, c)
		}
	}
	return out
}

// pathsIn are the control-plane binaries dir holds.
func (l *lookup) pathsIn(dir string) []string {
	var paths []string
	for _, name := range ControlPlaneNames() {
		if path := filepath.Join(dir, name); fileExists(path) {
			paths = append(paths, path)
		}
	}
	return paths
}

// inStore picks the store's version directory (step 7 of Lookup): the one
// of the version Resolve resolves to, or the newest one that holds the
// binaries (and, when they are checked, works and reports Version). It
// returns no directory when the store holds none and nothing is checked:
// the lookup's error then says where else it looked.
func (l *lookup) inStore(ctx context.Context) (dirSource, error) {
	store := l.Store
	if store == "" {
		var err error
		if store, err = DefaultStoreDir(); err != nil {
			return dirSource{}, err
		}
	}
	src := dirSource{from: "the envtest binary store " + store, strictRoot: store}
	at := func(dir string) dirSource {
		src.dir, src.what = dir, dir+" ("+src.from+")"
		return src
	}
	if l.Resolve != nil {
		v, err := l.Resolve(ctx, l.Version)
		if err != nil {
			return dirSource{}, err
		}
		return at(StoreDir(store, v)), l.resolved(ctx, store, v)
	}
	all, err := ListInstalled(store)
	if err != nil {
		return dirSource{}, err
	}
	var problems []string
	for _, in := range all {
		if in.OS != runtime.GOOS || in.Arch != runtime.GOARCH || !l.Version.Matches(in.Version) {
			continue
		}
		if !l.checks() {
			if l.holds(in.Dir) {
				return at(in.Dir), nil
			}
			continue
		}
		if err := refuseStore(store, l.pathsIn(in.Dir)...); err != nil {
			return dirSource{}, err
		}
		got, err := CheckBinaries(ctx, in.Dir, l.unnamed()...)
		switch {
		case err != nil:
			problems = append(problems, err.Error())
		case got != in.Version:
			problems = append(problems, fmt.Sprintf("%s holds Kubernetes %s", in.Dir, got))
		default:
			l.checked, l.found.Version = true, got
			return at(in.Dir), nil
		}
	}
	if !l.StoreOnly && !l.checks() {
		return src, nil
	}
	what := "Kubernetes version"
	if l.Version.Explicit() {
		what = "Kubernetes " + l.Version.Canonical()
	}
	msg := fmt.Sprintf("no %s for %s/%s installed in %s", what, runtime.GOOS, runtime.GOARCH, filepath.Join(store, "k8s"))
	if len(problems) > 0 {
		msg += " that works (" + strings.Join(problems, "; ") + ")"
	}
	return dirSource{}, errors.New(msg)
}

// resolved checks the store's directory of version v: its binaries must
// be there, pass the trust rule, work and report v; its errors say what
// provides them.
func (l *lookup) resolved(ctx context.Context, store string, v versions.Version) error {
	dir := StoreDir(store, v)
	provide := provideCommand(store, v, l.components)
	for _, c := range l.unnamed() {
		if path := filepath.Join(dir, c.Name); !fileExists(path) {
			return fmt.Errorf("the binaries of Kubernetes %s are not built yet (no %s): run `%s`; %s", v, path, provide, clihint.Get())
		}
	}
	if err := refuseStore(store, l.pathsIn(dir)...); err != nil {
		return err
	}
	got, err := CheckBinaries(ctx, dir, l.unnamed()...)
	if err != nil {
		return fmt.Errorf("the Kubernetes %s build is not usable: %v; run `%s`; %s", v, err, provide, clihint.Get())
	}
	if got != v {
		return fmt.Errorf("%s holds Kubernetes %s, not %s; run `%s` to provide it again; %s", dir, got, v, provide, clihint.Get())
	}
	l.checked, l.found.Version = true, got
	return nil
}

// check runs the binaries found for their versions (CheckBinaries), those
// of each directory together, and requires the Version asked for.
func (l *lookup) check(ctx context.Context, src dirSource) error {
	byDir := map[string][]Component{}
	var dirs []string
	for _, c := range l.components {
		d := filepath.Dir(l.found.Paths[c.Name])
		if _, ok := byDir[d]; !ok {
			dirs = append(dirs, d)
		}
		byDir[d] = append(byDir[d], c)
	}
	var kube versions.Version
	for _, d := range dirs {
		got, err := CheckBinaries(ctx, d, byDir[d]...)
		if err == nil && !kube.IsZero() && !got.IsZero() && got != kube {
			err = fmt.Errorf("%s holds Kubernetes %s, the other binaries %s; all must come from one version", d, got, kube)
		}
		if err != nil {
			return fmt.Errorf("%s: %v; put working binaries there, or unset %s to use the ones kubeharness provides", l.sourceOf(d, src), err, l.variableOf(d, src))
		}
		if !got.IsZero() {
			kube = got
		}
	}
	if !l.Version.Matches(kube) {
		sel, api := l.Version, filepath.Dir(l.found.Paths[KubeAPIServer.Name])
		return fmt.Errorf("%s asks for Kubernetes %s, but %s holds %s (kube-apiserver --version): point %s at %s binaries, unset it to use the ones kubeharness provides, or %s to use these",
			sel, sel.Canonical(), l.sourceOf(api, src), kube, l.variableOf(api, src), sel.Canonical(), sel.Drop())
	}
	l.found.Version = kube
	return nil
}

// sourceOf names who named dir, for messages: "$KUBEBUILDER_ASSETS=/a",
// "TEST_ASSET_ETCD".
func (l *lookup) sourceOf(dir string, src dirSource) string {
	for _, c := range l.components {
		if n, ok := l.named[c.Name]; ok && filepath.Dir(n.Path) == dir {
			return n.By
		}
	}
	if src.from == AssetsEnv {
		return "$" + AssetsEnv + "=" + src.dir
	}
	if src.what != "" {
		return src.what
	}
	return dir
}

// variableOf is the variable or field that named dir: TEST_ASSET_ETCD,
// KUBEBUILDER_ASSETS, Options.BinaryDir.
func (l *lookup) variableOf(dir string, src dirSource) string {
	for _, c := range l.components {
		if n, ok := l.named[c.Name]; ok && filepath.Dir(n.Path) == dir {
			return n.By
		}
	}
	if src.from != "" {
		return src.from
	}
	return dir
}

// refuse refuses the binaries at paths, found from what ("KUBEBUILDER_ASSETS
// /path"), when someone other than the caller and root could have changed
// them (ownership.CheckRun, private without exception from each binary's
// directory up to strictRoot); the error names each path, what is wrong and
// fix.
func refuse(what, fix, strictRoot string, paths ...string) error {
	if len(paths) == 0 {
		return nil
	}
	return ownership.Refuse("refusing the control-plane binaries from "+what, ownership.CheckRun(strictRoot, paths...), fix)
}

// refuseStore refuses binaries of the store whose bin-dir is binDir, at
// paths in one of its version directories, by the trust rule
// (store.Store.Refuse).
func refuseStore(binDir string, paths ...string) error {
	return store.Store{Dir: binDir}.Refuse(paths...)
}

// provideFix is how to provide binaries that only the caller can change,
// for the binary name that by (a variable or field) named, or for a
// directory of them.
func provideFix(by, name string) string {
	fix := "provide the binaries with `kubeharness bins use VERSION -p PATH`, PATH a directory only you can write, and "
	switch {
	case by == "":
		fix += "export KUBEBUILDER_ASSETS to the directory it prints"
	case strings.HasPrefix(by, "TEST_ASSET_"):
		fix += "point " + by + " at the " + name + " in the directory it prints"
	default:
		fix += "set " + by + " to the " + name + " in the directory it prints"
	}
	return fix + "; " + clihint.Get()
}

// notFound says which binary is missing where, and what provides it; path
// is where it was looked for, empty when nothing named a place.
func notFound(name, path, from string) error {
	where := "no KUBEBUILDER_ASSETS, BinaryAssetsDirectory or " + DefaultAssetsDir + ", and the envtest binary store holds none"
	if path != "" {
		where = path + " does not exist"
		if from != "" {
			where += " (from " + from + ")"
		}
	}
	use := "`kubeharness bins use VERSION -p path`"
	if name == KubeControllerManager.Name {
		// The envtest archive has none: only a build provides it.
		use = "`kubeharness bins use VERSION --with-controller-manager -p path` (the envtest archive has no kube-controller-manager: it is built)"
	}
	return fmt.Errorf("%s not found: %s. Provide the control-plane binaries with "+
		"%s (VERSION a Kubernetes minor such as 1.36; a download, or minutes of building "+
		"from source the first time, with progress) and export KUBEBUILDER_ASSETS to the directory it prints; %s", name, where, use, clihint.Get())
}

// provideCommand is the kubeharness command that provides components for
// Kubernetes v in the store at binDir.
func provideCommand(binDir string, v versions.Version, components []Component) string {
	flags := ""
	if slices.ContainsFunc(components, func(c Component) bool { return c.Name == KubeControllerManager.Name }) {
		flags = " --with-controller-manager"
	}
	return fmt.Sprintf("kubeharness bins use %s%s --bin-dir %s", v, flags, binDir)
}

func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir()
}
