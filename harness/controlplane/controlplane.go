package controlplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubeharness/kubeharness/harness/internal/clihint"
	"github.com/kubeharness/kubeharness/harness/process"
)

// Options configure a control plane.
type Options struct {
	// BinaryDir holds etcd and kube-apiserver (and kube-controller-manager
	// when Controllers are asked for); Start needs it. `kubeharness bins
	// use VERSION -p PATH` provides one and prints it, and harness/binaries
	// finds one. Binaries run only where no one but this user and root
	// could have changed them: Start refuses, before it runs anything, a
	// directory that another user owns or may write, one below such a
	// directory (a sticky one such as /tmp aside), or a binary there that
	// another user owns or may write, naming each path and the fix.
	BinaryDir string
	// TemplateDir is where bootstrapped etcd templates are kept between
	// starts (one per binary pair and flag set). Empty means the user's
	// cache directory (kubeharness/etcd-templates below os.UserCacheDir).
	// A start looks for its template there, then beside the binaries
	// (TemplatesBeside, where PrepareTemplate makes it), and makes a
	// missing one in TemplateDir (or the user's cache).
	// Templates are used only where no other user can have written them:
	// this user or root owns the template, what it holds and every
	// directory above it, and group and others cannot write them
	// (trust.go); Start refuses others.
	TemplateDir string
	// APIServerFlags replace the flags every harness API server runs with
	// (authorization, admission plugins, the Service range; see
	// HarnessAPIServerFlags). The tuned flags and the ports, certificates
	// and etcd address are added to them. Nil means HarnessAPIServerFlags.
	APIServerFlags []string
	// PlainAPIServer runs kube-apiserver even when BinaryDir holds
	// kube-apiserver-test (APIServerBinary), for comparison.
	PlainAPIServer bool
	// CRDs are CustomResourceDefinitions the control plane serves from
	// its start: the start begins from an etcd template that already
	// holds them established (crdtemplate.go), made once per set of CRDs
	// (keyed by their content) from the template of the same binaries and
	// flags. Installing the same CRDs after the start then finds them in
	// place.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// Controllers, when set, runs kube-controller-manager with these
	// controllers (e.g. garbagecollector, namespace, deployment), so the
	// control plane deletes dependents, finalizes namespaces and rolls out
	// Deployments as a cluster does.
	Controllers []string
	// Out receives the processes' output; nil discards it.
	Out io.Writer
	// StartTimeout bounds each process's start; zero means 60s.
	StartTimeout time.Duration
	// AuditDir, when set, has kube-apiserver record requests to a log of
	// its own in this directory (audit.go); empty means $KUBEHARNESS_AUDIT_DIR.
	AuditDir string
	// Dir, when set, is where the control plane makes its directories
	// (its certificates and kubeconfigs, etcd's sockets, and etcd's data)
	// instead of the system's temporary directory and tmpfs: whoever owns
	// Dir can remove what a crashed start left without trusting a path
	// recorded elsewhere.
	Dir string
}

// ControlPlane is a running etcd and kube-apiserver, and
// kube-controller-manager when asked for: each a component (component.go)
// of its own.
type ControlPlane struct {
	// Config is an admin (system:masters) client configuration.
	Config *rest.Config
	// BinaryDir is where etcd and kube-apiserver came from.
	BinaryDir string
	// EtcdDataDir is etcd's data directory (on tmpfs unless Options.Dir).
	EtcdDataDir string

	// dir holds the certificates, kubeconfigs and etcd's sockets.
	dir      string
	keepData bool
	etcd     *etcdServer
	api      *apiServer
	kcm      *controllerManager
	pki      *controlPlanePKI
	// startTimeout bounds a restart's wait for readiness too.
	startTimeout time.Duration
	// Times is where the last start spent its time.
	Times StartTimes
}

// components are the plane's components, in the order they start.
func (c *ControlPlane) components() []component {
	var comps []component
	if c.etcd != nil {
		comps = append(comps, c.etcd)
	}
	if c.api != nil {
		comps = append(comps, c.api)
	}
	if c.kcm != nil {
		comps = append(comps, c.kcm)
	}
	return comps
}

// Start starts etcd and kube-apiserver (and kube-controller-manager when
// asked) from o.BinaryDir and returns once the API server answers:
//   - etcd on tmpfs without fsync, with a single-member election in
//     milliseconds instead of about a second;
//   - etcd's data starts from a bootstrapped template (etcdtemplate.go);
//   - readiness is /readyz without the two post-start hooks that only
//     re-check bootstrap objects the template already holds (each sleeps a
//     whole second before its first try);
//   - every process dies with this one (harness/process: a parent-death
//     signal on Linux, a watchdog on the other Unix systems), so a crashed
//     test run leaves nothing behind;
//   - etcd listens on unix sockets in a directory only this user can enter,
//     no TCP port (etcdsocket.go).
func Start(o Options) (*ControlPlane, error) {
	if noUnix != "" {
		return nil, errors.New(noUnix)
	}
	if o.BinaryDir == "" {
		return nil, errors.New("controlplane: Options.BinaryDir is empty: set it to a directory of control-plane binaries; " +
			"`kubeharness bins use VERSION -p PATH` provides one and prints it, and harness/binaries finds one; " + clihint.Get())
	}
	// etcd and kube-apiserver run in the plane's own directory, where a
	// relative path would name something else.
	for _, p := range []*string{&o.BinaryDir, &o.Dir, &o.TemplateDir} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return nil, fmt.Errorf("controlplane: %w", err)
		}
		*p = abs
	}
	if err := CheckBinaryDir(o.BinaryDir); err != nil {
		return nil, err
	}
	if o.APIServerFlags == nil {
		o.APIServerFlags = HarnessAPIServerFlags()
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 60 * time.Second
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	cp := &ControlPlane{BinaryDir: o.BinaryDir}
	if err := cp.start(o); err != nil {
		_ = cp.Stop()
		return nil, fmt.Errorf("starting the control plane (binaries from %s): %w", o.BinaryDir, err)
	}
	cp.Config.QPS, cp.Config.Burst = 200, 400
	return cp, nil
}

// start copies the etcd template to etcd's data directory and runs the
// components on it. Where no template holds what the start needs, the
// start makes it on its own plane, without a start and stop of its own
// (snapshot.go): from an empty data directory it waits for the whole
// bootstrap and keeps etcd's data as the base template; with CRDs no
// template holds yet, it installs them and keeps etcd's data once
// discovery serves them, before anyone else writes to the plane.
func (c *ControlPlane) start(o Options) error {
	began := time.Now()
	if !canFreeze {
		template, err := ensureTemplate(c.BinaryDir, o)
		if err != nil {
			return err
		}
		return c.startFrom(o, template, began)
	}
	need, err := findTemplates(c.BinaryDir, o)
	if err != nil {
		return err
	}
	if err := c.startFrom(o, need.from, began); err != nil {
		return err
	}
	if err := c.makeTemplates(o, need); err != nil {
		return err
	}
	if len(o.Controllers) > 0 {
		return c.startControllerManager(o)
	}
	return nil
}

// startFrom runs the components on a copy of template, or on an empty
// data directory when template is "" (a bootstrap: every hook must
// finish).
func (c *ControlPlane) startFrom(o Options, template string, began time.Time) error {
	var err error
	if c.EtcdDataDir, err = os.MkdirTemp(cmp.Or(o.Dir, etcdTmpfsDir()), "kubeharness-etcd-"); err != nil {
		return fmt.Errorf("creating etcd data directory: %w", err)
	}
	readyPath := "/readyz"
	if template != "" {
		if err := copyTree(template, c.EtcdDataDir); err != nil {
			return fmt.Errorf("copying the etcd template %s: %w", template, err)
		}
		readyPath = tunedReadyPath
	}
	c.Times.Template = time.Since(began)
	if err := c.run(o, readyPath); err != nil {
		return err
	}
	if !canFreeze && len(o.Controllers) > 0 {
		return c.startControllerManager(o)
	}
	return nil
}

// startControllerManager runs kube-controller-manager with the admin
// identity and only the controllers asked for.
func (c *ControlPlane) startControllerManager(o Options) error {
	kubeconfig, err := c.KubeConfig(rest.ImpersonationConfig{})
	if err != nil {
		return err
	}
	kubeconfigPath := filepath.Join(c.dir, "admin.kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		return err
	}
	c.kcm = &controllerManager{
		path: filepath.Join(c.BinaryDir, controllerManagerBinary), kubeconfig: kubeconfigPath,
		controllers: o.Controllers, out: o.Out,
	}
	return c.kcm.start()
}

// run starts etcd on c.EtcdDataDir and kube-apiserver, and waits until the
// API server answers readyPath with 200.
func (c *ControlPlane) run(o Options, readyPath string) error {
	var err error
	if c.dir, err = os.MkdirTemp(o.Dir, "kubeharness-controlplane-"); err != nil {
		return err
	}
	ports, err := FreePorts(1)
	if err != nil {
		return err
	}
	c.startTimeout = o.StartTimeout
	ctx, cancel := context.WithTimeout(context.Background(), o.StartTimeout)
	defer cancel()

	began := time.Now()
	if c.pki, err = newControlPlanePKI(); err != nil {
		return err
	}
	if err := c.pki.write(c.dir); err != nil {
		return err
	}
	c.Times.PKI = time.Since(began)

	// etcd listens in c.dir only, its working directory and the API
	// server's (etcdsocket.go).
	c.etcd = &etcdServer{path: filepath.Join(c.BinaryDir, etcdBinary), dataDir: c.EtcdDataDir, dir: c.dir, out: o.Out, keepData: c.keepData}
	c.Times.APIServer = APIServerBinary(c.BinaryDir, o)
	c.api = &apiServer{
		path: filepath.Join(c.BinaryDir, c.Times.APIServer), dir: c.dir, port: ports[0],
		flags: apiServerFlags(o, c.dir), out: o.Out, readyPath: readyPath, pki: c.pki,
	}

	// etcd and kube-apiserver start together: the API server spends its
	// first few hundred milliseconds loading and initializing before it
	// dials etcd, and waits for etcd when it is not up yet.
	began = time.Now()
	if err := c.etcd.start(); err != nil {
		return err
	}
	apiBegan := time.Now()
	if err := c.api.start(); err != nil {
		return err
	}
	if err := c.etcd.ready(ctx); err != nil {
		return fmt.Errorf("etcd did not become healthy: %w", err)
	}
	c.Times.Etcd = time.Since(began)

	c.Config = c.api.admin()
	w := &readyWatch{began: apiBegan}
	if err := c.api.wait(ctx, verbose(readyPath), w.observe); err != nil {
		return fmt.Errorf("kube-apiserver did not become ready: %w", err)
	}
	c.Times.APIServerServing, c.Times.APIServerReady, c.Times.LastChecks = w.firstAnswer, time.Since(apiBegan)-w.firstAnswer, w.lastFailing
	return nil
}

// KubeConfig returns an admin kubeconfig for the control plane; with
// impersonation set, the admin acts as that user (kubectl's --as).
func (c *ControlPlane) KubeConfig(as rest.ImpersonationConfig) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["envtest"] = &clientcmdapi.Cluster{Server: c.Config.Host, CertificateAuthorityData: c.Config.CAData}
	cfg.AuthInfos["kubeharness-admin"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: c.Config.CertData, ClientKeyData: c.Config.KeyData,
		Impersonate: as.UserName, ImpersonateGroups: as.Groups,
	}
	cfg.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "kubeharness-admin", Namespace: "default"}
	cfg.CurrentContext = "envtest"
	return clientcmd.Write(*cfg)
}

// PIDs returns the process ids of etcd, kube-apiserver and
// kube-controller-manager, those that were started.
func (c *ControlPlane) PIDs() map[string]int {
	pids := map[string]int{}
	for name, p := range c.running() {
		pids[name] = p.Pid()
	}
	return pids
}

// running are the processes the control plane started, by component.
func (c *ControlPlane) running() map[string]*process.Process {
	procs := map[string]*process.Process{}
	for _, k := range c.components() {
		if p := k.process(); p != nil {
			procs[string(k.name())] = p
		}
	}
	return procs
}

// Executables maps each running process, by the names PIDs uses, to the
// program it runs: kube-apiserver may run kube-apiserver-test
// (APIServerBinary). Whoever records PIDs to find the processes again
// checks them against these.
func (c *ControlPlane) Executables() map[string]string {
	exes := map[string]string{}
	for name, p := range c.running() {
		exes[name] = p.Command().Path
	}
	return exes
}

// Stop ends the control plane and removes its files. A test control plane
// is disposable (its etcd data lives on tmpfs and is removed here), so it
// is not shut down gracefully: every process group gets SIGKILL at once,
// and Stop returns once each process has been reaped and its directories
// removed, leaving no process, port or file behind. Only the start that
// makes an etcd template, whose data is kept, stops etcd with SIGTERM and
// a grace period, after the others are gone.
func (c *ControlPlane) Stop() error {
	err := stopComponents(c.components())
	if c.EtcdDataDir != "" && !c.keepData {
		_ = os.RemoveAll(c.EtcdDataDir)
	}
	if c.dir != "" {
		_ = os.RemoveAll(c.dir)
	}
	return err
}

// etcdTmpfsDir is where etcd's data goes unless Options.Dir says: tmpfs
// where there is one.
func etcdTmpfsDir() string {
	if fi, err := os.Stat(etcdTmpfs); err == nil && fi.IsDir() {
		return etcdTmpfs
	}
	return os.TempDir()
}

// etcdTmpfs is where tuned etcd keeps its data: a memory filesystem, so that
// no write waits for a disk.
const etcdTmpfs = "/dev/shm"
