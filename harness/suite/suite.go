package suite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/onsi/ginkgo/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/harness/bundle"
	"github.com/kubeharness/kubeharness/harness/report"
)

// namespaceEntry names the report entry Namespace records its namespace
// in; bundledEntry the one it records a namespace whose bundle it wrote.
const (
	namespaceEntry = "kubeharness/namespace"
	bundledEntry   = "kubeharness/namespace-bundled"
)

// NamespaceOption sets something of the namespace Namespace creates.
type NamespaceOption func(*corev1.Namespace)

// WithLabels labels the namespace (a sidecar injector's opt-in label, a
// Pod Security level, …).
func WithLabels(labels map[string]string) NamespaceOption {
	return func(ns *corev1.Namespace) {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		for k, v := range labels {
			ns.Labels[k] = v
		}
	}
}

// Namespace creates a namespace for the running spec, named prefix plus a
// random suffix, deletes it when the spec ends, and records it in the
// spec's report. When the spec failed and the suite registered
// BundleFailures, the namespace's part of the failure bundle is written
// before the namespace is deleted: where a namespace controller runs
// (a cluster, or envtest with kube-controller-manager), deleting it
// removes what the bundle must show. It fails the spec when the namespace
// cannot be created.
func Namespace(ctx context.Context, c client.Client, prefix string, opts ...NamespaceOption) string {
	ginkgo.GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	for _, o := range opts {
		o(ns)
	}
	if err := c.Create(ctx, ns); err != nil {
		ginkgo.Fail(fmt.Sprintf("creating a namespace for the spec: %v", err))
	}
	ginkgo.AddReportEntry(namespaceEntry, ns.Name, ginkgo.ReportEntryVisibilityNever)
	ginkgo.DeferCleanup(func(ctx context.Context) error {
		if report := ginkgo.CurrentSpecReport(); report.Failed() {
			if f := registered.Load(); f != nil {
				f.writeNamespace(ctx, report, ns.Name, time.Now())
			}
		}
		err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns.Name}})
		return client.IgnoreNotFound(err)
	})
	return ns.Name
}

// SpecNamespaces returns the namespaces Namespace made for a spec, from
// its report.
func SpecNamespaces(report ginkgo.SpecReport) []string {
	return entries(report, namespaceEntry)
}

// entries are the values of report's entries named name, in order.
func entries(report ginkgo.SpecReport, name string) []string {
	var out []string
	for _, e := range report.ReportEntries {
		if e.Name == name {
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
	// Collect, when set, adds what only the suite knows to a failed spec's
	// bundle directory dir (a deployed manager's Pod logs, say), after
	// the namespaces' parts and the logs are written. dir is made private
	// first (bundle.OpenDir); Collect should write its files with
	// bundle.WriteFile, which keeps them so.
	Collect func(ctx context.Context, dir string, report ginkgo.SpecReport) error
}

// registered is what BundleFailures registered, for Namespace.
var registered atomic.Pointer[Failures]

func (f *Failures) timeout() time.Duration {
	if f.Timeout == 0 {
		return 30 * time.Second
	}
	return f.Timeout
}

// writeNamespace writes the bundle of namespace ns of the failed spec of
// report, up to end: objects and events, and, for the spec's first
// namespace, the logs; the spec's i-th namespace below its own directory.
// It records that ns is bundled, or why not completely.
func (f *Failures) writeNamespace(ctx context.Context, report ginkgo.SpecReport, ns string, end time.Time) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout())
	defer cancel()
	var cfg *rest.Config
	if f.Config != nil {
		cfg = f.Config()
	}
	if cfg == nil {
		return
	}
	dir := bundle.Dir(f.Artifacts, report.FullText())
	b := bundle.Bundle{Config: cfg, Namespace: ns, Start: report.StartTime, End: end}
	if i := slices.Index(SpecNamespaces(report), ns); i > 0 {
		dir = filepath.Join(dir, ns)
	} else {
		b.Logs = f.Logs
	}
	if err := b.Write(ctx, dir); err != nil {
		ginkgo.GinkgoWriter.Printf("failure bundle of namespace %s incomplete: %v\n", ns, err)
	}
	ginkgo.AddReportEntry(bundledEntry, ns, ginkgo.ReportEntryVisibilityNever)
}

// bundleEntry names the report entry BundleFailures records a bundle's
// directory in, where harness/report looks for it.
const bundleEntry = report.BundleEntry

// BundleFailures registers, at the top level of a suite (var _ =
// suite.BundleFailures(...)), a ReportAfterEach that writes a failure
// bundle for every failed spec: the objects and events of each namespace
// Namespace made for it, and the lines each of the logs got while it ran.
// It names the bundle's directory in the spec's report.
//
// Namespace writes a namespace's part before deleting it; what is left
// (a namespace it could not bundle then, the logs of a spec without one,
// Collect's part) is written here, once the spec has ended.
func BundleFailures(f Failures) bool {
	registered.Store(&f)
	return ginkgo.ReportAfterEach(func(report ginkgo.SpecReport) {
		if !report.Failed() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), f.timeout())
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
		bundled := entries(report, bundledEntry)
		for _, ns := range namespaces {
			if cfg != nil && !slices.Contains(bundled, ns) {
				f.writeNamespace(ctx, report, ns, report.EndTime)
			}
		}
		if f.Collect != nil {
			// Collect's directory is private before it writes, as
			// the rest of the bundle.
			if root, err := bundle.OpenDir(dir); err != nil {
				errs = append(errs, err)
			} else {
				_ = root.Close()
				errs = append(errs, f.Collect(ctx, dir, report))
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

// writeLogs writes the lines each of logs got during the spec into the
// bundle directory dir, as <name>.log: private files in a private
// directory (bundle.WriteFile).
func writeLogs(dir string, logs []bundle.Log, report ginkgo.SpecReport) error {
	root, err := bundle.OpenDir(dir)
	if err != nil {
		return err
	}
	_ = root.Close()
	var errs []error
	for _, l := range logs {
		lines, err := bundle.LogWindow(l.Path, report.StartTime, report.EndTime)
		errs = append(errs, err, bundle.WriteFile(dir, l.Name+".log", lines))
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
