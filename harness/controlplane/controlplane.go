package controlplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubeharness/kubeharness/harness/binaries"
	"github.com/kubeharness/kubeharness/harness/process"
	"github.com/kubeharness/kubeharness/harness/versions"
)

// Options configure a control plane.
type Options struct {
	// BinaryDir holds etcd and kube-apiserver (and kube-controller-manager
	// when Controllers are asked for). Empty means the directory Root and
	// Version resolve to. Binaries run only where no one but this user and
	// root could have changed them: Start refuses, before it runs anything,
	// a directory that another user owns or may write, one below such a
	// directory (a sticky one such as /tmp aside), or a binary there that
	// another user owns or may write, naming each path and the fix.
	BinaryDir string
	// Root is the repository root: versions.yaml, the binaries below
	// bin/k8s and the etcd templates next to them are found below it.
	// Only needed without BinaryDir or TemplateDir.
	Root string
	// Version is the Kubernetes version; the zero Version means
	// versions.yaml's default.
	Version versions.Version
	// TemplateDir is where bootstrapped etcd templates are kept between
	// starts (one per binary pair and flag set). Empty means
	// bin/k8s/.etcd-templates below Root, or without Root the user's cache
	// directory (kubeharness/etcd-templates). Templates are used only
	// where no other user can have written them: this user or root owns
	// the template, what it holds and every directory above it, and group
	// and others cannot write them (trust.go); Start refuses others.
	TemplateDir string
	// APIServerFlags replace the flags every harness API server runs with
	// (authorization, admission plugins, the Service range; see
	// HarnessAPIServerFlags). The tuned flags and the ports, certificates
	// and etcd address are added to them. Nil means HarnessAPIServerFlags.
	APIServerFlags []string
	// PlainAPIServer runs kube-apiserver in a tuned start even when
	// BinaryDir holds kube-apiserver-test (APIServerBinary), for
	// comparison.
	PlainAPIServer bool
	// Stock starts etcd and kube-apiserver through controller-runtime's
	// envtest.Environment with its settings as they come, for comparison.
	// Otherwise kubeharness runs them itself with tuned settings.
	Stock bool
	// CRDs are CustomResourceDefinitions the control plane serves from
	// its start: a tuned start begins from an etcd template that already
	// holds them established (crdtemplate.go), made once per set of CRDs
	// (keyed by their content) from the template of the same binaries and
	// flags. Installing the same CRDs after the start then finds them in
	// place. Stock starts ignore them.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// Controllers, when set, runs kube-controller-manager with these
	// controllers (e.g. garbagecollector, namespace, deployment), so the
	// control plane deletes dependents, finalizes namespaces and rolls out
	// Deployments as a cluster does. Tuned starts only.
	Controllers []string
	// Out receives etcd's and kube-apiserver's output; nil discards it.
	Out io.Writer
	// StartTimeout bounds each process's start; zero means 60s.
	StartTimeout time.Duration
	// AuditDir, when set, has kube-apiserver record requests to a log of
	// its own in this directory (audit.go); empty means $KUBEHARNESS_AUDIT_DIR.
	// Tuned starts only.
	AuditDir string
	// Dir, when set, is where a tuned control plane makes its directories
	// (its certificates and kubeconfigs, etcd's sockets, and etcd's data)
	// instead of the system's temporary directory and tmpfs: whoever owns
	// Dir can remove what a crashed start left without trusting a path
	// recorded elsewhere.
	Dir string
}

// ControlPlane is a running etcd and kube-apiserver.
type ControlPlane struct {
	// Config is an admin (system:masters) client configuration.
	Config *rest.Config
	// BinaryDir is where etcd and kube-apiserver came from.
	BinaryDir string
	// EtcdDataDir is etcd's data directory (on tmpfs when tuned).
	EtcdDataDir string

	dir       string
	keepData  bool
	etcd, api *process.Process
	kcm       *process.Process
	pki       *controlPlanePKI
	stock     *envtest.Environment
	// apiURL is where kube-apiserver listens (etcd listens in dir), and
	// readyPath what the API server answers 200 on once ready: a restart
	// (faults.go) waits on them again.
	apiURL, readyPath string
	startTimeout      time.Duration
	// Times is where the last tuned start spent its time.
	Times StartTimes
}

// Start starts etcd and kube-apiserver (and kube-controller-manager when
// asked) and returns once the API server answers.
func Start(o Options) (*ControlPlane, error) {
	dir, checked := o.BinaryDir, ""
	if dir == "" {
		if o.Version.IsZero() {
			lock, err := versions.LoadLockfile(o.Root)
			if err != nil {
				return nil, err
			}
			o.Version = lock.Default
		}
		// binaries.Find runs each binary's version flag: the directory
		// it will take is checked before.
		checked = cmp.Or(os.Getenv(binaries.AssetsEnv), binaries.Dir(o.Root, o.Version))
		if _, err := os.Stat(checked); err == nil {
			if err := checkBinaryDir(checked); err != nil {
				return nil, err
			}
		}
		var err error
		if dir, err = binaries.Find(o.Root, o.Version); err != nil {
			return nil, err
		}
	}
	if dir != checked {
		if err := checkBinaryDir(dir); err != nil {
			return nil, err
		}
	}
	if o.APIServerFlags == nil {
		o.APIServerFlags = HarnessAPIServerFlags()
	}
	var err error
	if o.StartTimeout == 0 {
		o.StartTimeout = 60 * time.Second
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	cp := &ControlPlane{BinaryDir: dir}
	if o.Stock {
		err = cp.startStock(o)
	} else {
		err = cp.startTuned(o)
	}
	if err != nil {
		_ = cp.Stop()
		return nil, fmt.Errorf("starting the control plane (binaries from %s): %w", dir, err)
	}
	cp.Config.QPS, cp.Config.Burst = 200, 400
	return cp, nil
}

// startStock is controller-runtime's envtest as it comes.
func (c *ControlPlane) startStock(o Options) error {
	c.stock = &envtest.Environment{
		BinaryAssetsDirectory:    c.BinaryDir,
		ControlPlaneStartTimeout: o.StartTimeout,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	// The binaries of the directory Start checked run, not those
	// TEST_ASSET_* or KUBEBUILDER_ASSETS would name to controller-runtime.
	c.stock.ControlPlane.Etcd = &envtest.Etcd{Out: o.Out, Err: o.Out, Path: filepath.Join(c.BinaryDir, binaries.Etcd.Name)}
	c.stock.ControlPlane.KubectlPath = filepath.Join(c.BinaryDir, binaries.Kubectl.Name)
	api := c.stock.ControlPlane.GetAPIServer()
	api.Out, api.Err = o.Out, o.Out
	api.Path = filepath.Join(c.BinaryDir, binaries.KubeAPIServer.Name)
	cfg, err := c.stock.Start()
	c.Config = cfg
	return err
}

// startTuned runs etcd and kube-apiserver directly:
//   - etcd on tmpfs without fsync, with a single-member election in
//     milliseconds instead of about a second;
//   - etcd's data starts from a bootstrapped template (etcdtemplate.go);
//   - readiness is /readyz without the two post-start hooks that only
//     re-check bootstrap objects the template already holds (each sleeps a
//     whole second before its first try);
//   - both processes die with this one (harness/process; on Linux), so a
//     crashed test run leaves nothing behind.
//   - etcd listens on unix sockets in a directory only this user can enter,
//     no TCP port (etcdsocket.go).
func (c *ControlPlane) startTuned(o Options) error {
	began := time.Now()
	template, err := ensureTemplate(c.BinaryDir, o)
	if err != nil {
		return err
	}
	if c.EtcdDataDir, err = os.MkdirTemp(cmp.Or(o.Dir, etcdTmpfsDir()), "kubeharness-etcd-"); err != nil {
		return fmt.Errorf("creating etcd data directory: %w", err)
	}
	if err := copyTree(template, c.EtcdDataDir); err != nil {
		return fmt.Errorf("copying the etcd template %s: %w", template, err)
	}
	c.Times.Template = time.Since(began)
	if err := c.run(o, tunedReadyPath); err != nil {
		return err
	}
	if len(o.Controllers) > 0 {
		return c.startControllerManager(o)
	}
	return nil
}

// tunedReadyPath is what a start from a template waits for: /readyz
// without the two post-start hooks that only re-check bootstrap objects
// the template already holds (each sleeps a whole second before its first
// try).
const tunedReadyPath = "/readyz?exclude=poststarthook/rbac/bootstrap-roles&exclude=poststarthook/scheduling/bootstrap-system-priority-classes"

// startControllerManager runs kube-controller-manager with the admin
// identity and only the controllers asked for. Their informers sync in the
// background; callers wait for the effects they need.
func (c *ControlPlane) startControllerManager(o Options) error {
	path := filepath.Join(c.BinaryDir, "kube-controller-manager")
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("kube-controller-manager not found in %s: provide it with `kubeharness bins use VERSION --with-controller-manager` (the envtest archive has none)", c.BinaryDir)
	}
	kubeconfig, err := c.KubeConfig(rest.ImpersonationConfig{})
	if err != nil {
		return err
	}
	kubeconfigPath := filepath.Join(c.dir, "admin.kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		return err
	}
	c.kcm, err = command(o.Out, path,
		"--kubeconfig="+kubeconfigPath,
		"--controllers="+strings.Join(o.Controllers, ","),
		"--leader-elect=false",
		"--bind-address=127.0.0.1", "--secure-port=0",
		"--concurrent-gc-syncs=5",
	).Start()
	return err
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
	// etcd listens in c.dir only, its working directory and the API
	// server's (etcdsocket.go).
	listen, err := etcdListenArgs(c.dir)
	if err != nil {
		return err
	}
	c.readyPath, c.startTimeout = readyPath, o.StartTimeout
	ctx, cancel := context.WithTimeout(context.Background(), o.StartTimeout)
	defer cancel()

	etcd := command(o.Out, filepath.Join(c.BinaryDir, "etcd"), append(append([]string{
		"--data-dir=" + c.EtcdDataDir,
	}, listen...), tunedEtcdFlags()...)...)
	etcd.Dir = c.dir
	began := time.Now()
	if c.pki, err = newControlPlanePKI(); err != nil {
		return err
	}
	if err := c.pki.write(c.dir); err != nil {
		return err
	}
	c.Times.PKI = time.Since(began)

	// etcd and kube-apiserver start together: the API server spends its
	// first few hundred milliseconds loading and initializing before it
	// dials etcd, and waits for etcd when it is not up yet.
	began = time.Now()
	if c.etcd, err = etcd.Start(); err != nil {
		return err
	}
	apiURL := "https://127.0.0.1:" + strconv.Itoa(ports[0])
	c.apiURL = apiURL
	apiBegan := time.Now()
	c.Times.APIServer = APIServerBinary(c.BinaryDir, o)
	api := command(o.Out, filepath.Join(c.BinaryDir, c.Times.APIServer), append([]string{
		"--etcd-servers=" + etcdClientURL,
		"--advertise-address=127.0.0.1", "--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(ports[0]),
		"--cert-dir=" + c.dir,
		"--tls-cert-file=" + filepath.Join(c.dir, "apiserver.crt"), "--tls-private-key-file=" + filepath.Join(c.dir, "apiserver.key"),
		"--client-ca-file=" + filepath.Join(c.dir, "ca.crt"),
		"--service-account-issuer=" + apiURL + "/",
		"--service-account-key-file=" + filepath.Join(c.dir, "sa.key"),
		"--service-account-signing-key-file=" + filepath.Join(c.dir, "sa.key"),
	}, append(append(slices.Clone(o.APIServerFlags), tunedAPIServerFlags()...), auditFlags(o, c.dir, o.Out)...)...)...)
	api.Dir = c.dir
	if c.api, err = api.Start(); err != nil {
		return err
	}
	if err := c.waitEtcd(ctx, c.etcd); err != nil {
		return fmt.Errorf("etcd did not become healthy: %w", err)
	}
	c.Times.Etcd = time.Since(began)

	c.Config = &rest.Config{
		Host: apiURL,
		TLSClientConfig: rest.TLSClientConfig{
			CAData: c.pki.caCert, CertData: c.pki.adminCert, KeyData: c.pki.adminKey,
		},
	}
	hc, err := rest.HTTPClientFor(c.Config)
	if err != nil {
		return err
	}
	w := &readyWatch{began: apiBegan}
	if err := c.api.WaitHTTP(ctx, hc, apiURL+verbose(readyPath), w.observe); err != nil {
		return fmt.Errorf("kube-apiserver did not become ready: %w", err)
	}
	c.Times.APIServerServing, c.Times.APIServerReady, c.Times.LastChecks = w.firstAnswer, time.Since(apiBegan)-w.firstAnswer, w.lastFailing
	return nil
}

// APIServerBinary is the API server a tuned start of o runs from dir:
// kube-apiserver-test, kube-apiserver with the built-in APIs' OpenAPI
// documents built on first request instead of at start (see
// binaries.KubeAPIServerTest), when dir holds it and o does not ask for the
// stock one; kube-apiserver otherwise.
func APIServerBinary(dir string, o Options) string {
	if !o.PlainAPIServer {
		if fi, err := os.Stat(filepath.Join(dir, binaries.KubeAPIServerTest.Name)); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return binaries.KubeAPIServerTest.Name
		}
	}
	return binaries.KubeAPIServer.Name
}

// command is how a tuned control plane runs a process (harness/process):
// in a process group of its own, so that Ctrl-C reaches the harness, which
// stops the processes in order; killed when the harness dies, however it
// dies; its output to out.
func command(out io.Writer, path string, args ...string) process.Command {
	return process.Command{Path: path, Args: args, Out: out}
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
// kube-controller-manager, those that run, when tuned.
func (c *ControlPlane) PIDs() map[string]int {
	pids := map[string]int{}
	for name, p := range c.running() {
		pids[name] = p.Pid()
	}
	return pids
}

// running are the processes the control plane started, by name.
func (c *ControlPlane) running() map[string]*process.Process {
	procs := map[string]*process.Process{}
	for name, p := range map[string]*process.Process{"etcd": c.etcd, "kube-apiserver": c.api, "kube-controller-manager": c.kcm} {
		if p != nil {
			procs[name] = p
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
// is disposable (its etcd data lives on tmpfs and is removed here), so a
// tuned plane is not shut down gracefully: every process group gets SIGKILL
// at once, and Stop returns once each process has been reaped and its
// directories removed, leaving no process, port or file behind. Only the
// start that makes an etcd template, whose data is kept, stops etcd with
// SIGTERM and a grace period, after the others are gone.
func (c *ControlPlane) Stop() error {
	var errs []error
	if c.stock != nil {
		errs = append(errs, c.stock.Stop())
	}
	if c.keepData {
		// The template's data is etcd's: every write the start waited for
		// is committed there, so the API server goes as in any stop, and
		// only etcd gets the time to close its data cleanly.
		errs = append(errs, killAll(c.kcm, c.api), stopProcess(c.etcd, 10*time.Second))
	} else {
		errs = append(errs, killAll(c.kcm, c.api, c.etcd))
	}
	if c.EtcdDataDir != "" && !c.keepData {
		_ = os.RemoveAll(c.EtcdDataDir)
	}
	if c.dir != "" {
		_ = os.RemoveAll(c.dir)
	}
	return errors.Join(errs...)
}

// killAll sends SIGKILL to the process groups of every process started,
// all before waiting for any, and returns once each has been reaped.
func killAll(ps ...*process.Process) error {
	var errs []error
	var started []*process.Process
	for _, p := range ps {
		if p == nil {
			continue
		}
		if err := p.SignalGroup(syscall.SIGKILL); err != nil {
			errs = append(errs, err)
		}
		started = append(started, p)
	}
	for _, p := range started {
		<-p.Done()
	}
	return errors.Join(errs...)
}

// stopProcess stops p (process.Process.Stop) when it was started.
func stopProcess(p *process.Process, grace time.Duration) error {
	if p == nil {
		return nil
	}
	return p.Stop(grace)
}

func etcdTmpfsDir() string {
	if fi, err := os.Stat(etcdTmpfs); err == nil && fi.IsDir() {
		return etcdTmpfs
	}
	return os.TempDir()
}

// The two flag sets a tuned API server starts from (Options.APIServerFlags;
// the tuned flags, ports, certificates and etcd's address are added):
//   - EnvtestAPIServerFlags, controller-runtime envtest's own, for the
//     drop-in (harness/envtest), so that a suite written for envtest sees
//     the API server it expects;
//   - HarnessAPIServerFlags, controlplane.Start's default, for suites that
//     test what a cluster enforces (the Node authorizer, NodeRestriction,
//     owner-reference permissions) and need room for many Services.
// Either is part of the etcd template's identity: the template holds
// objects (the default ServiceCIDR) that depend on them.

// EnvtestAPIServerFlags are the flags controller-runtime's envtest runs
// kube-apiserver with: no ServiceAccount admission, RBAC only, a small
// Service range.
func EnvtestAPIServerFlags() []string {
	return []string{
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
		"--disable-admission-plugins=ServiceAccount",
		"--authorization-mode=RBAC",
	}
}

// HarnessAPIServerFlags are the settings a harness API server runs with
// unless Options.APIServerFlags says otherwise, tuned or not.
func HarnessAPIServerFlags() []string {
	return []string{
		// Room for a few thousand Services: the AppService benchmark makes 1,000.
		"--service-cluster-ip-range=10.96.0.0/16",
		"--allow-privileged=true",
		// Node lets kubelets (and specs impersonating them) update their own
		// Node status, as in a cluster; NodeRestriction keeps them to it.
		// OwnerReferencesPermissionEnforcement, as hardened clusters run it:
		// an owner reference that blocks the owner's deletion needs update on
		// the owner's finalizers, which the manager's role grants for that.
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction,OwnerReferencesPermissionEnforcement",
		// No controller-manager creates ServiceAccount tokens here.
		"--disable-admission-plugins=ServiceAccount",
	}
}

// DefaultControllers are the kube-controller-manager controllers the
// harness runs on envtest: owner-reference garbage collection, namespace
// finalization and Deployment rollout to ReplicaSets and Pods.
var DefaultControllers = []string{"garbagecollector", "namespace", "deployment", "replicaset"}

// etcdTmpfs is where tuned etcd keeps its data: a memory filesystem, so that
// no write waits for a disk.
const etcdTmpfs = "/dev/shm"
