package envtest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubeharness/kubeharness/harness/binaries"
	"github.com/kubeharness/kubeharness/harness/controlplane"
	"github.com/kubeharness/kubeharness/harness/internal/clihint"
	"github.com/kubeharness/kubeharness/harness/internal/ownership"
)

// Environment is controller-runtime's envtest.Environment with the same
// fields, set the same way; its Start runs the tuned control plane. Code
// that builds an &envtest.Environment{...} literal, reads
// WebhookInstallOptions or calls Start, Stop and AddUser compiles
// unchanged when its import switches to this package.
type Environment crenvtest.Environment

// The types and functions of controller-runtime's envtest package that
// suites name, so that only the import line changes.
type (
	ControlPlane          = crenvtest.ControlPlane
	APIServer             = crenvtest.APIServer
	Etcd                  = crenvtest.Etcd
	User                  = crenvtest.User
	AuthenticatedUser     = crenvtest.AuthenticatedUser
	ListenAddr            = crenvtest.ListenAddr
	SecureServing         = crenvtest.SecureServing
	Authn                 = crenvtest.Authn
	Arguments             = crenvtest.Arguments
	Arg                   = crenvtest.Arg
	CRDInstallOptions     = crenvtest.CRDInstallOptions
	WebhookInstallOptions = crenvtest.WebhookInstallOptions
)

// Functions and values of controller-runtime's envtest package, for the
// same reason.
var (
	EmptyArguments                           = crenvtest.EmptyArguments
	DefaultKubeAPIServerFlags                = crenvtest.DefaultKubeAPIServerFlags //nolint:staticcheck // kept for suites that still use it
	InstallCRDs                              = crenvtest.InstallCRDs
	UninstallCRDs                            = crenvtest.UninstallCRDs
	CreateCRDs                               = crenvtest.CreateCRDs
	ReadCRDFiles                             = crenvtest.ReadCRDFiles
	WaitForCRDs                              = crenvtest.WaitForCRDs
	WaitForWebhooks                          = crenvtest.WaitForWebhooks
	SetupEnvtestDefaultBinaryAssetsDirectory = crenvtest.SetupEnvtestDefaultBinaryAssetsDirectory
)

// Start timeouts of controller-runtime's envtest, in seconds.
const (
	StartTimeout = crenvtest.StartTimeout
	StopTimeout  = crenvtest.StopTimeout
)

// EnvStock, set to "stock", makes Start run controller-runtime's envtest
// as it comes: to compare, or to rule the tuned control plane out when a
// suite misbehaves.
const EnvStock = "KUBEHARNESS_ENVTEST"

// EnvControllers names kube-controller-manager controllers (a comma-separated
// list, e.g. "namespace,garbagecollector") that Start runs beside the tuned
// control plane, so that a suite can delete namespaces and see owned objects
// collected, which controller-runtime's envtest cannot. RunControllers does
// the same from code; the two lists are joined.
const EnvControllers = "KUBEHARNESS_CONTROLLERS"

// controllers holds what RunControllers asked of each Environment: the
// struct is controller-runtime's, with no field to spare.
var controllers sync.Map // *Environment -> []string

// RunControllers makes Start run kube-controller-manager with these
// controllers (kube-controller-manager's names: namespace,
// garbagecollector, deployment-controller, …) beside the tuned control
// plane, as KUBEHARNESS_CONTROLLERS does; kube-controller-manager must sit
// beside kube-apiserver (`kubeharness bins use VERSION
// --with-controller-manager`). It returns te, so that it chains onto a
// struct literal. The stock start (KUBEHARNESS_ENVTEST=stock, and every
// start on Windows) runs no controllers.
func (te *Environment) RunControllers(names ...string) *Environment {
	controllers.Store(te, append([]string(nil), names...))
	return te
}

// controllerNames returns what RunControllers and KUBEHARNESS_CONTROLLERS
// ask for, each name once, in the order asked.
func (te *Environment) controllerNames() ([]string, error) {
	var names []string
	if v, ok := controllers.Load(te); ok {
		names = append(names, v.([]string)...)
	}
	names = append(names, strings.Split(os.Getenv(EnvControllers), ",")...)
	seen := map[string]bool{}
	var out []string
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" || seen[n] {
			continue
		}
		for _, r := range n {
			if !(r == '-' || r == '*' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
				return nil, fmt.Errorf("envtest: controller %q (from RunControllers or %s): a kube-controller-manager controller name, such as namespace or garbagecollector, is lower-case letters, digits and dashes", n, EnvControllers)
			}
		}
		seen[n] = true
		out = append(out, n)
	}
	return out, nil
}

// defaultStartTimeout bounds a tuned start when neither the Environment
// nor KUBEBUILDER_CONTROLPLANE_START_TIMEOUT sets a timeout. The first
// start with new binaries also bootstraps the etcd template, a stock-speed
// start, so it is longer than controller-runtime's 20 s default.
const defaultStartTimeout = 60 * time.Second

// Start starts the tuned control plane (etcd from a bootstrapped template
// that already holds the CRDs the suite installs, on tmpfs without fsync, kube-apiserver with controller-runtime's envtest
// flags and no priority and fairness), provisions the admin user as
// controller-runtime does (system:masters, QPS 1000, burst 2000), then lets
// controller-runtime's own code install the CRDs and webhooks. It returns
// the admin configuration, also in Config and KubeConfig.
//
// With UseExistingCluster (or USE_EXISTING_CLUSTER=true),
// DownloadBinaryAssets, or KUBEHARNESS_ENVTEST=stock it is
// controller-runtime's Start; on Windows it always is (whyStock says why,
// on standard error, at the first start).
func (te *Environment) Start() (*rest.Config, error) {
	cr := (*crenvtest.Environment)(te)
	if te.useExistingCluster() {
		return cr.Start()
	}
	if te.DownloadBinaryAssets || os.Getenv(EnvStock) == "stock" || stockOnly() {
		if err := te.checkStock(); err != nil {
			return nil, err
		}
		return cr.Start()
	}
	if te.running() != nil {
		return nil, errors.New("envtest: Start called on an Environment that is running; Stop it first")
	}
	began := time.Now()
	bins, err := te.findBinaries()
	if err != nil {
		return nil, err
	}
	// The directory of links findBinaries may have made is the plane's to
	// remove once it has one (planeAuthn.Stop), this function's until then.
	handedOver := false
	defer func() {
		if !handedOver && bins.linkDir != "" {
			_ = os.RemoveAll(bins.linkDir)
		}
	}()
	timeout, err := te.startTimeout()
	if err != nil {
		return nil, err
	}
	names, err := te.controllerNames()
	if err != nil {
		return nil, err
	}
	if len(names) > 0 && !fileExists(filepath.Join(bins.dir, "kube-controller-manager")) {
		return nil, fmt.Errorf("envtest: controllers %s asked for (RunControllers or %s), but %s holds no kube-controller-manager (binaries from %s): "+
			"run `kubeharness bins use VERSION --with-controller-manager -p path` and export KUBEBUILDER_ASSETS to the directory it prints; %s",
			strings.Join(names, ","), EnvControllers, bins.dir, cmp.Or(bins.from, "the envtest binary store"), clihint.Get())
	}
	out := io.Discard
	if te.AttachControlPlaneOutput || os.Getenv("KUBEBUILDER_ATTACH_CONTROL_PLANE_OUTPUT") == "true" {
		out = os.Stdout
	}
	flags := EnvtestAPIServerFlags()
	if te.ControlPlane.APIServer != nil {
		// What the suite configured on controller-runtime's API server
		// (Configure().Set/Append) goes last, so it wins.
		flags = append(flags, te.ControlPlane.APIServer.Configure().AsStrings(nil)...)
	}
	crds := te.crdsToInstall()
	plane, err := controlplane.Start(controlplane.Options{
		BinaryDir: bins.dir, APIServerFlags: flags, Out: out, StartTimeout: timeout,
		PlainAPIServer: bins.namedAPIServer, Controllers: names, CRDs: crds,
	})
	if err != nil {
		return nil, fmt.Errorf("envtest: %w", err)
	}
	u, err := url.Parse(plane.Config.Host)
	if err != nil {
		_ = plane.Stop()
		return nil, fmt.Errorf("envtest: the control plane's address %q: %w", plane.Config.Host, err)
	}
	api := te.ControlPlane.GetAPIServer()
	api.SecureServing.ListenAddr = ListenAddr{Address: u.Hostname(), Port: u.Port()}
	api.SecureServing.CA = plane.Config.CAData
	api.SecureServing.Authn = &planeAuthn{plane: plane, linkDir: bins.linkDir}
	handedOver = true
	api.CertDir, api.Path = plane.Dir(), bins.apiServer
	if plane.Times.APIServer != filepath.Base(bins.apiServer) {
		api.Path = filepath.Join(bins.dir, plane.Times.APIServer)
	}
	if te.ControlPlane.Etcd == nil {
		te.ControlPlane.Etcd = &Etcd{}
	}
	te.ControlPlane.Etcd.Path = bins.etcd
	if te.ControlPlane.KubectlPath == "" {
		te.ControlPlane.KubectlPath = bins.kubectl
	}

	admin, err := te.ControlPlane.AddUser(User{Name: "admin", Groups: []string{"system:masters"}}, &rest.Config{QPS: 1000, Burst: 2000})
	if err != nil {
		te.stopPlane()
		return nil, fmt.Errorf("envtest: provisioning the admin user: %w", err)
	}
	te.Config = admin.Config()

	// controller-runtime installs CRDs and webhooks on the running control
	// plane, as it would on any existing cluster.
	times := StartTimes{ControlPlane: time.Since(began), ControlPlaneSteps: plane.Times, CRDs: len(crds)}
	existing, asked := true, te.UseExistingCluster
	te.UseExistingCluster = &existing
	if err := te.webhookPort(); err != nil {
		te.stopPlane()
		return nil, err
	}
	// Its updates of CRDs the template holds as they are change nothing;
	// the install's client answers them itself (heldCRDs).
	te.Config = withHeldCRDs(admin.Config(), crds)
	installBegan := time.Now()
	_, err = cr.Start()
	te.UseExistingCluster, te.Config = asked, admin.Config()
	if err != nil {
		te.stopPlane()
		return nil, err
	}
	times.Install, times.Total = time.Since(installBegan), time.Since(began)
	te.record(times)
	return te.Config, nil
}

// webhookPort picks the port the webhooks' server is to serve on, as
// controller-runtime's install would (a free port on 127.0.0.1, where
// "localhost" resolves), when the suite left it to the install:
// controller-runtime's own pick reserves it with a file below the user's
// cache directory (kubebuilder-envtest/port-N) that stays there.
func (te *Environment) webhookPort() error {
	w := &te.WebhookInstallOptions
	if w.LocalServingPort != 0 || (w.LocalServingHost != "" && w.LocalServingHost != "127.0.0.1") {
		return nil
	}
	ports, err := controlplane.FreePorts(1)
	if err != nil {
		return fmt.Errorf("envtest: a port for the webhooks' server: %w", err)
	}
	w.LocalServingHost, w.LocalServingPort = "127.0.0.1", ports[0]
	return nil
}

// crdsToInstall are the CRDs controller-runtime's Start will install (the
// CRDInstallOptions' and CRDs, and those in the CRDInstallOptions' and
// CRDDirectoryPaths' files), so that the plane starts from an etcd
// template that holds them already (controlplane.Options.CRDs). Files that
// cannot be read give none: controller-runtime's install then reports why.
func (te *Environment) crdsToInstall() []*apiextensionsv1.CustomResourceDefinition {
	opts := te.CRDInstallOptions
	opts.CRDs = append(slices.Clone(opts.CRDs), te.CRDs...)
	opts.Paths = append(slices.Clone(opts.Paths), te.CRDDirectoryPaths...)
	opts.ErrorIfPathMissing = te.ErrorIfCRDPathMissing
	if err := ReadCRDFiles(&opts); err != nil {
		return nil
	}
	return opts.CRDs
}

// Stop uninstalls CRDs when CRDInstallOptions.CleanUpAfterUse asks for it,
// removes the webhooks' serving certificates and stops the control plane.
// It can be called again after an error.
func (te *Environment) Stop() error {
	return (*crenvtest.Environment)(te).Stop()
}

// AddUser provisions a user with the given name and groups: a client
// certificate signed by the control plane's CA, so that the API server
// authorizes exactly that user (with RBAC) whatever impersonation the
// client sets. baseConfig, when given, supplies the rest of the client
// configuration (QPS, timeouts).
func (te *Environment) AddUser(user User, baseConfig *rest.Config) (*AuthenticatedUser, error) {
	return (*crenvtest.Environment)(te).AddUser(user, baseConfig)
}

// EnvtestAPIServerFlags are the flags controller-runtime's envtest runs
// kube-apiserver with, which the drop-in's API server runs with too
// (controlplane.EnvtestAPIServerFlags).
func EnvtestAPIServerFlags() []string { return controlplane.EnvtestAPIServerFlags() }

func (te *Environment) useExistingCluster() bool {
	if te.UseExistingCluster != nil {
		return *te.UseExistingCluster
	}
	return strings.EqualFold(os.Getenv("USE_EXISTING_CLUSTER"), "true")
}

func (te *Environment) startTimeout() (time.Duration, error) {
	if te.ControlPlaneStartTimeout > 0 {
		return te.ControlPlaneStartTimeout, nil
	}
	if v := os.Getenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return 0, fmt.Errorf("envtest: KUBEBUILDER_CONTROLPLANE_START_TIMEOUT=%q: %w", v, err)
		}
		return d, nil
	}
	return defaultStartTimeout, nil
}

// running returns the control plane Start started, nil when none runs.
func (te *Environment) running() *controlplane.ControlPlane {
	if te.ControlPlane.APIServer == nil {
		return nil
	}
	if a, ok := te.ControlPlane.APIServer.SecureServing.Authn.(*planeAuthn); ok && !a.stopped {
		return a.plane
	}
	return nil
}

func (te *Environment) stopPlane() {
	if plane := te.running(); plane != nil {
		_ = te.ControlPlane.APIServer.SecureServing.Authn.Stop()
	}
}

// planeAuthn is controller-runtime's Authn over a tuned control plane:
// users get client certificates from the plane's CA, and stopping it (as
// controller-runtime's ControlPlane.Stop does) stops the plane. It holds
// the plane, so the Environment needs no field of its own.
type planeAuthn struct {
	plane   *controlplane.ControlPlane
	stopped bool
	// linkDir, when set, is the directory of links to etcd and
	// kube-apiserver the plane ran from (findBinaries), removed with it.
	linkDir string
}

var _ Authn = (*planeAuthn)(nil)

// Configure is part of Authn; the tuned control plane configured its API
// server itself.
func (a *planeAuthn) Configure(string, *Arguments) error { return nil }

// Start is part of Authn; the plane runs already.
func (a *planeAuthn) Start() error { return nil }

// AddUser implements Authn.
func (a *planeAuthn) AddUser(user User, baseCfg *rest.Config) (*rest.Config, error) {
	cfg, err := a.plane.AddUser(user.Name, user.Groups...)
	if err != nil {
		return nil, err
	}
	out := &rest.Config{}
	if baseCfg != nil {
		out = rest.CopyConfig(baseCfg)
	}
	out.CertData, out.KeyData = cfg.CertData, cfg.KeyData
	return out, nil
}

// Stop implements Authn: it stops the control plane, once.
func (a *planeAuthn) Stop() error {
	if a.stopped {
		return nil
	}
	a.stopped = true
	err := a.plane.Stop()
	if a.linkDir != "" {
		_ = os.RemoveAll(a.linkDir)
	}
	return err
}

// binaryPaths are where etcd, kube-apiserver and kubectl were found, and
// the one directory the control plane runs them from.
type binaryPaths struct {
	dir, etcd, apiServer, kubectl string
	// linkDir is dir when findBinaries made it: links to etcd and
	// kube-apiserver found in different directories.
	linkDir string
	// from says where dir came from, for messages.
	from string
	// namedAPIServer is set when the suite named kube-apiserver's path
	// (ControlPlane.APIServer.Path, TEST_ASSET_KUBE_APISERVER): that binary
	// runs, not kube-apiserver-test beside it.
	namedAPIServer bool
}

// findBinaries finds etcd and kube-apiserver with binaries.Lookup, the
// one lookup: where controller-runtime's envtest looks, in its order (an
// explicit Path on the ControlPlane, TEST_ASSET_ETCD and
// TEST_ASSET_KUBE_APISERVER, KUBEBUILDER_ASSETS, BinaryAssetsDirectory,
// /usr/local/kubebuilder/bin), then in the store `kubeharness bins use`
// and setup-envtest fill, newest version first. What it finds passed the
// trust rule; binaries found in two directories run from a directory of
// links, this start's own.
func (te *Environment) findBinaries() (binaryPaths, error) {
	named := map[string]binaries.Named{}
	if te.ControlPlane.Etcd != nil && te.ControlPlane.Etcd.Path != "" {
		named[binaries.Etcd.Name] = binaries.Named{Path: te.ControlPlane.Etcd.Path, By: "ControlPlane.Etcd.Path"}
	}
	if te.ControlPlane.APIServer != nil && te.ControlPlane.APIServer.Path != "" {
		named[binaries.KubeAPIServer.Name] = binaries.Named{Path: te.ControlPlane.APIServer.Path, By: "ControlPlane.APIServer.Path"}
	}
	found, err := binaries.Lookup(context.Background(), binaries.Where{Named: named, AssetsDirectory: te.BinaryAssetsDirectory})
	if err != nil {
		return binaryPaths{}, fmt.Errorf("envtest: %w", err)
	}
	p := binaryPaths{
		etcd: found.Paths[binaries.Etcd.Name], apiServer: found.Paths[binaries.KubeAPIServer.Name], kubectl: found.Paths[binaries.Kubectl.Name],
		from: found.From, namedAPIServer: slices.Contains(found.Named, binaries.KubeAPIServer.Name),
	}
	if found.Dir != "" {
		p.dir = found.Dir
		return p, nil
	}
	// Else from links to them, in a directory of this start's own: below a
	// temporary directory that others cannot swap (a sticky /tmp will do),
	// made 0700. The control plane checks it, and where its links lead,
	// again.
	if err := ownership.CheckDirChain(os.TempDir()); err != nil {
		return p, ownership.Refuse("envtest: refusing "+os.TempDir()+" for the links to etcd and kube-apiserver", []error{err},
			"set TMPDIR to a directory only you can write", "put etcd and kube-apiserver in one directory")
	}
	link, err := os.MkdirTemp("", "kubeharness-envtest-bin-")
	if err != nil {
		return p, err
	}
	for name, path := range map[string]string{binaries.Etcd.Name: p.etcd, binaries.KubeAPIServer.Name: p.apiServer} {
		abs, err := filepath.Abs(path)
		if err == nil {
			err = os.Symlink(abs, filepath.Join(link, name))
		}
		if err != nil {
			_ = os.RemoveAll(link)
			return p, err
		}
	}
	p.dir, p.linkDir = link, link
	return p, nil
}

// provideFix is how to provide binaries that only this user can change.
const provideFix = "provide the binaries with `kubeharness bins use VERSION -p PATH`, PATH a directory only you can write, and export KUBEBUILDER_ASSETS to the directory it prints"

// checkStock refuses what controller-runtime's own start would run when
// someone other than this user and root could have changed it
// (ownership.CheckRun): the binaries its lookup names, or the directory
// it looks in where one is missing (it could appear there); with
// DownloadBinaryAssets, the directory it downloads to and the binaries
// downloaded there before, which it runs without a download.
func (te *Environment) checkStock() error {
	fix := provideFix + "; " + clihint.Get()
	if te.DownloadBinaryAssets {
		dir := te.BinaryAssetsDirectory
		if dir == "" {
			// A directory of its own, made with os.MkdirTemp.
			if err := ownership.CheckDirChain(os.TempDir()); err != nil {
				return ownership.Refuse("envtest: refusing "+os.TempDir()+" for the binaries DownloadBinaryAssets downloads", []error{err}, "set TMPDIR to a directory only you can write")
			}
			return nil
		}
		if !dirExists(dir) {
			// It makes dir, 0700, below the nearest directory there is.
			d := dir
			for !dirExists(d) && d != filepath.Dir(d) {
				d = filepath.Dir(d)
			}
			if err := ownership.CheckDirChain(d); err != nil {
				return ownership.Refuse("envtest: refusing BinaryAssetsDirectory "+dir, []error{err}, fix)
			}
			return nil
		}
		var paths []string
		entries, _ := os.ReadDir(dir)
		for _, v := range entries {
			for _, name := range []string{"etcd", "kube-apiserver", "kubectl"} {
				if path := filepath.Join(dir, v.Name(), name); fileExists(path) {
					paths = append(paths, path)
				}
			}
		}
		problems := ownership.DirProblems(dir, dir)
		if len(paths) > 0 {
			problems = ownership.CheckRun(dir, paths...)
		}
		return ownership.Refuse("envtest: refusing the control-plane binaries from BinaryAssetsDirectory "+dir, problems, fix)
	}
	paths := map[string]string{"etcd": "", "kube-apiserver": "", "kubectl": te.ControlPlane.KubectlPath}
	if te.ControlPlane.Etcd != nil {
		paths["etcd"] = te.ControlPlane.Etcd.Path
	}
	if te.ControlPlane.APIServer != nil {
		paths["kube-apiserver"] = te.ControlPlane.APIServer.Path
	}
	for _, name := range []string{"etcd", "kube-apiserver", "kubectl"} {
		path := cmp.Or(paths[name], stockPath(name, te.BinaryAssetsDirectory))
		var problems []error
		switch dir := filepath.Dir(path); {
		case path == "":
			// A variable set empty: controller-runtime runs nothing.
		case fileExists(path):
			problems = ownership.CheckRun(dir, path)
		case dirExists(dir):
			problems = ownership.DirProblems(dir, dir)
		}
		if err := ownership.Refuse("envtest: refusing the "+name+" that controller-runtime's envtest would run ("+path+")", problems, fix); err != nil {
			return err
		}
	}
	return nil
}

// stockPath is the binary name that controller-runtime's envtest runs
// when its Path is not set (its process.BinPathFinder): TEST_ASSET_<NAME>
// when set, else in KUBEBUILDER_ASSETS when set, else in dir
// (BinaryAssetsDirectory) when set, else in /usr/local/kubebuilder/bin.
func stockPath(name, dir string) string {
	variable := binaries.TestAssetEnv(name)
	if v, ok := os.LookupEnv(variable); ok {
		return v
	}
	if v, ok := os.LookupEnv("KUBEBUILDER_ASSETS"); ok {
		return filepath.Join(v, name)
	}
	return filepath.Join(cmp.Or(dir, binaries.DefaultAssetsDir), name)
}

func dirExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir()
}
