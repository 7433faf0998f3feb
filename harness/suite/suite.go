package suite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/onsi/ginkgo/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/harness/bundle"
	"github.com/kubeharness/kubeharness/harness/report"
)

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
