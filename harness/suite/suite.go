package suite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/onsi/ginkgo/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/harness/bundle"
	"github.com/kubeharness/kubeharness/harness/report"
)

// Share is for the first function of Ginkgo's SynchronizedBeforeSuite, in
// the process that started the control plane: it writes cfg's connection
// (the API server's address and CA, the client's credentials) to a
// kubeconfig with ShareFile and returns the file's path, which is all that
// crosses to the other processes. The directory is removed when the suite
// ends (DeferCleanup in SynchronizedBeforeSuite runs on this process after
// every other has finished).
func Share(cfg *rest.Config) ([]byte, error) {
	data, err := kubeconfig(cfg)
	if err != nil {
		return nil, err
	}
	path, remove, err := ShareFile("kubeconfig", data)
	if err != nil {
		return nil, err
	}
	ginkgo.DeferCleanup(remove)
	return []byte(path), nil
}

// Connect is for the second function of SynchronizedBeforeSuite, on every
// process: it reads the kubeconfig whose path Share returned (ReadShared).
func Connect(shared []byte) (*rest.Config, error) {
	data, err := ReadShared(string(shared))
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return nil, fmt.Errorf("suite: the shared connection %s: %w", shared, err)
	}
	return cfg, nil
}

// ShareFile writes data, which may hold credentials, to a file name of
// mode 0600 in a new directory of mode 0700 and returns the file's path
// for the other processes, and a function that removes both. Suites that
// hand over more than a rest.Config use it with ReadShared.
func ShareFile(name string, data []byte) (path string, remove func() error, err error) {
	// MkdirTemp makes the directory with mode 0700.
	dir, err := os.MkdirTemp("", "kubeharness-shared-")
	if err != nil {
		return "", nil, fmt.Errorf("suite: sharing with the other Ginkgo processes: %w", err)
	}
	remove = func() error { return os.RemoveAll(dir) }
	path = filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		_ = remove()
		return "", nil, fmt.Errorf("suite: sharing with the other Ginkgo processes: %w", err)
	}
	return path, remove, nil
}

// ReadShared reads the file ShareFile wrote at path, after checking that
// only this user can read it: the file of mode 0600 and its directory of
// mode 0700, both owned by this user.
func ReadShared(path string) ([]byte, error) {
	if path == "" || !filepath.IsAbs(path) {
		return nil, fmt.Errorf("suite: %q is not what Share returns (an absolute path)", path)
	}
	for _, p := range []struct {
		path string
		mode os.FileMode
	}{{filepath.Dir(path), os.ModeDir | 0o700}, {path, 0o600}} {
		fi, err := os.Lstat(p.path)
		if err != nil {
			return nil, fmt.Errorf("suite: reading what Ginkgo's first process shared: %w", err)
		}
		owner := -1
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			owner = int(st.Uid)
		}
		if fi.Mode() != p.mode || owner != os.Getuid() {
			return nil, fmt.Errorf("%s holds credentials but has mode %s and owner uid %d: it must have mode %s and be owned by uid %d, as ShareFile makes it",
				p.path, fi.Mode(), owner, p.mode, os.Getuid())
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("suite: reading what Ginkgo's first process shared: %w", err)
	}
	return data, nil
}

func kubeconfig(cfg *rest.Config) ([]byte, error) {
	if cfg == nil || cfg.Host == "" {
		return nil, errors.New("suite: Share needs the control plane's rest.Config (its Host is empty)")
	}
	if cfg.CAFile != "" || cfg.CertFile != "" || cfg.KeyFile != "" {
		cfg = rest.CopyConfig(cfg)
		if err := rest.LoadTLSFiles(cfg); err != nil {
			return nil, fmt.Errorf("suite: reading the client's TLS files: %w", err)
		}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["suite"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData,
		InsecureSkipTLSVerify: cfg.Insecure, TLSServerName: cfg.ServerName}
	kc.AuthInfos["suite"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData,
		Token: cfg.BearerToken, Username: cfg.Username, Password: cfg.Password,
		Impersonate: cfg.Impersonate.UserName, ImpersonateGroups: cfg.Impersonate.Groups}
	kc.Contexts["suite"] = &clientcmdapi.Context{Cluster: "suite", AuthInfo: "suite"}
	kc.CurrentContext = "suite"
	return clientcmd.Write(*kc)
}

// namespaceEntry names the report entry Namespace records its namespace in.
const namespaceEntry = "kubeharness/namespace"

// Namespace creates a namespace for the running spec, named prefix plus a
// random suffix, deletes it when the spec ends, and records it in the
// spec's report so that BundleFailures knows which namespace the spec
// used. It fails the spec when the namespace cannot be created.
func Namespace(ctx context.Context, c client.Client, prefix string) string {
	ginkgo.GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := c.Create(ctx, ns); err != nil {
		ginkgo.Fail(fmt.Sprintf("creating a namespace for the spec: %v", err))
	}
	ginkgo.AddReportEntry(namespaceEntry, ns.Name, ginkgo.ReportEntryVisibilityNever)
	ginkgo.DeferCleanup(func(ctx context.Context) error {
		err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns.Name}})
		return client.IgnoreNotFound(err)
	})
	return ns.Name
}

// SpecNamespaces returns the namespaces Namespace made for a spec, from
// its report.
func SpecNamespaces(report ginkgo.SpecReport) []string {
	var out []string
	for _, e := range report.ReportEntries {
		if e.Name == namespaceEntry {
			out = append(out, e.Value.String())
		}
	}
	return out
}

// Failures configures BundleFailures.
type Failures struct {
	// Artifacts is the directory bundles are written below, as
	// <Artifacts>/failures/<spec> (bundle.Dir).
	Artifacts string
	// Config returns the configuration to read the failed spec's namespace
	// with; it is called when a spec fails, so it may return what a
	// BeforeSuite set after BundleFailures was registered. Nil or a nil
	// result writes logs only.
	Config func() *rest.Config
	// Logs are the JSON logs whose lines during the spec go into the
	// bundle (a manager's, say).
	Logs []bundle.Log
	// Timeout bounds the writing of one bundle; zero means 30 s.
	Timeout time.Duration
}

// bundleEntry names the report entry BundleFailures records a bundle's
// directory in, where harness/report looks for it.
const bundleEntry = report.BundleEntry

// BundleFailures registers, at the top level of a suite (var _ =
// suite.BundleFailures(...)), a ReportAfterEach that writes a failure
// bundle for every failed spec: the objects and events of each namespace
// Namespace made for it, and the lines each of the logs got while it ran.
// It names the bundle's directory in the spec's report.
func BundleFailures(f Failures) bool {
	return ginkgo.ReportAfterEach(func(report ginkgo.SpecReport) {
		if !report.Failed() {
			return
		}
		timeout := f.Timeout
		if timeout == 0 {
			timeout = 30 * time.Second
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		dir := bundle.Dir(f.Artifacts, report.FullText())
		var cfg *rest.Config
		if f.Config != nil {
			cfg = f.Config()
		}
		namespaces := SpecNamespaces(report)
		var errs []error
		if cfg == nil || len(namespaces) == 0 {
			errs = append(errs, writeLogs(dir, f.Logs, report))
		}
		for i, ns := range namespaces {
			b := bundle.Bundle{Config: cfg, Namespace: ns, Start: report.StartTime, End: report.EndTime}
			if i == 0 {
				b.Logs = f.Logs
			}
			d := dir
			if i > 0 {
				d = filepath.Join(dir, ns)
			}
			if cfg != nil {
				errs = append(errs, b.Write(ctx, d))
			}
		}
		msg := "failure bundle: " + dir
		if err := errors.Join(errs...); err != nil {
			msg += fmt.Sprintf(" (incomplete: %v)", err)
		}
		ginkgo.GinkgoWriter.Println(msg)
		ginkgo.AddReportEntry(bundleEntry, dir)
	})
}

func writeLogs(dir string, logs []bundle.Log, report ginkgo.SpecReport) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var errs []error
	for _, l := range logs {
		lines, err := bundle.LogWindow(l.Path, report.StartTime, report.EndTime)
		errs = append(errs, err, os.WriteFile(filepath.Join(dir, l.Name+".log"), lines, 0o644))
	}
	return errors.Join(errs...)
}

// RecordAttempts registers, at the top level of a suite (var _ =
// suite.RecordAttempts(...)), a ReportAfterSuite that keeps every
// attempt's report of a run repeated with ginkgo --repeat in
// <artifacts>/attempts/ (report.WriteAttempt): Ginkgo's own --json-report
// holds only the last attempt, and harness/report needs them all to tell a
// spec that passed in one attempt and failed in another. artifacts is
// called when an attempt ends, so it may return what a BeforeSuite set; an
// empty result records nothing. A report that cannot be recorded fails
// the suite.
func RecordAttempts(artifacts func() string) bool {
	return ginkgo.ReportAfterSuite("record the attempt for the run report", func(r ginkgo.Report) {
		dir := artifacts()
		if dir == "" {
			return
		}
		if err := report.WriteAttempt(dir, r); err != nil {
			ginkgo.Fail(fmt.Sprintf("%v (in %s)", err, dir))
		}
	})
}
