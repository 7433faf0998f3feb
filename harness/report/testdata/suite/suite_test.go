// The suite the recorded runs under testdata/ come from
// (go test ./harness/report -run TestRecordFixtures -record): a spec that
// passes, one that fails after By steps, one skipped, one that fails its
// first attempt and passes its second (FlakeAttempts), a Serial one, in two
// processes. With FIXTURE_REPEAT set, the failing spec passes and another
// fails in the second attempt of ginkgo --repeat=1.
package suite_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kubeharness/kubeharness/harness/bundle"
	"github.com/kubeharness/kubeharness/harness/report"
	"github.com/kubeharness/kubeharness/harness/suite"
)

// artifacts is where the run's report, its bundles and the counter files
// go: the --output-dir of the recording.
var artifacts = os.Getenv("FIXTURE_ARTIFACTS")

// repeat is set for the recording with ginkgo --repeat=1.
var repeat = os.Getenv("FIXTURE_REPEAT") != ""

func TestFixture(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "report fixture")
}

var _ = suite.BundleFailures(suite.Failures{
	Artifacts: artifacts,
	Logs:      []bundle.Log{{Name: "widgets", Path: filepath.Join(artifacts, "widgets.log")}},
})

var _ = suite.RecordAttempts(func() string { return artifacts })

// Each failed spec's bundle gets an events file, as a bundle of a real
// namespace would.
var _ = ReportAfterEach(func(r SpecReport) {
	if !r.Failed() {
		return
	}
	dir := bundle.Dir(artifacts, r.FullText())
	Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	events := fmt.Sprintf("%s\tNormal\tCreated\tWidget/w-1\tcreated widget w-1\n%s\tWarning\tRejected\tWidget/w-1\tspec.size: Invalid value: \"<huge>\": must be at most 10\n",
		r.StartTime.UTC().Format(time.RFC3339Nano), r.EndTime.UTC().Format(time.RFC3339Nano))
	Expect(os.WriteFile(filepath.Join(dir, bundle.EventsFile), []byte(events), 0o644)).To(Succeed())
})

var _ = SynchronizedBeforeSuite(func() []byte {
	start := time.Now()
	By("starting the fixture's pretend control plane")
	AddReportEntry(report.KubernetesVersionEntry, "v1.37.1", ReportEntryVisibilityNever)
	AddReportEntry(report.ProviderEntry, "fixture", ReportEntryVisibilityNever)
	AddReportEntry(report.MachineEntry, report.ThisMachine(), ReportEntryVisibilityNever)
	AddReportEntry(report.CommitEntry, "0123456789abcdef", ReportEntryVisibilityNever)
	AddReportEntry(report.PhaseEntryPrefix+"control plane start", time.Since(start), ReportEntryVisibilityNever)
	return nil
}, func([]byte) {})

var _ = SynchronizedAfterSuite(func() {}, func() {
	By("stopping the fixture's pretend control plane")
})

// logLine appends a JSON log line to the widgets log, as a controller
// would; a failed spec's bundle holds its lines.
func logLine(msg string) {
	f, err := os.OpenFile(filepath.Join(artifacts, "widgets.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = f.Close() }()
	line, err := json.Marshal(map[string]string{"ts": time.Now().UTC().Format(time.RFC3339Nano), "msg": msg})
	Expect(err).NotTo(HaveOccurred())
	_, err = f.Write(append(line, '\n'))
	Expect(err).NotTo(HaveOccurred())
}

// count increments the counter file name in artifacts and returns its new
// value: how often this spec ran in the recording, across retries and
// repeated attempts.
func count(name string) int {
	path := filepath.Join(artifacts, name)
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		Fail(err.Error())
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	n++
	Expect(os.WriteFile(path, []byte(strconv.Itoa(n)), 0o644)).To(Succeed())
	return n
}

var _ = Describe("widgets", func() {
	It("creates a widget", func() {
		By("creating widget w-0")
		logLine("created widget w-0")
		AddReportEntry(report.WaitedOnEntry, "widget w-0 Ready", ReportEntryVisibilityNever)
		Expect(runtime.NumGoroutine()).To(BeNumerically(">", 0))
	})

	It("rejects a <b>huge</b> widget & says why", func() {
		By("creating widget w-1 with size <huge>")
		logLine("reconciling widget w-1")
		By("waiting for the webhook's verdict")
		logLine("rejected widget w-1: size <huge> is over 10")
		verdict := "admitted"
		if repeat {
			verdict = "rejected"
		}
		Expect(verdict).To(Equal("rejected"), "the webhook let widget w-1 <huge> through")
	})

	It("resizes a widget on kind", func() {
		Skip("needs the kind provider")
	})

	It("settles a widget eventually", FlakeAttempts(3), func() {
		By("reading the widget's status")
		Expect(count("settles.count")).To(BeNumerically(">", 1), "the first attempt sees a stale status")
	})

	It("rotates the widgets' CA", Serial, func() {
		By("rotating the CA")
		logLine("rotated the CA")
	})

	It("lists widgets across namespaces", func() {
		n := count("lists.count")
		if repeat {
			Expect(n).To(Equal(1), "attempt %d saw a widget of another spec", n)
		}
	})
})
