package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"k8s.io/client-go/rest"

	hcluster "github.com/kubeharness/kubeharness/harness/cluster"
	"github.com/kubeharness/kubeharness/harness/coverage"
	"github.com/kubeharness/kubeharness/harness/report"
	"github.com/kubeharness/kubeharness/harness/suite"
	"github.com/kubeharness/kubeharness/internal/operatortest"
	"github.com/kubeharness/kubeharness/internal/repo"
	"github.com/kubeharness/kubeharness/internal/vmfixture"
)

var (
	provider  hcluster.Provider
	cluster   *suiteCluster
	artifacts string
	// root is the repository root: config/, versions.yaml, bin/.
	root string
)

// suiteCluster is the cluster the specs run on, with this repository's
// operator on it: the provider offers the operator as an ability
// (operatortest.OperatorOf).
type suiteCluster struct {
	*hcluster.Cluster
	*operatortest.Operator
}

// newSuiteCluster pairs c with the operator its provider runs on it.
func newSuiteCluster(c *hcluster.Cluster) *suiteCluster {
	GinkgoHelper()
	op := operatortest.OperatorOf(c)
	Expect(op).NotTo(BeNil(), "the %s provider started a cluster without this repository's operator", c.Provider)
	return &suiteCluster{Cluster: c, Operator: op}
}

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	// Every Eventually waits up to operatortest.Reconcile and every Consistently
	// holds for operatortest.NoHotLoopWindow, polling at operatortest.Poll, unless
	// a spec names another of framework's timeouts.
	SetDefaultEventuallyTimeout(operatortest.Reconcile)
	SetDefaultEventuallyPollingInterval(operatortest.Poll)
	SetDefaultConsistentlyDuration(operatortest.NoHotLoopWindow)
	SetDefaultConsistentlyPollingInterval(operatortest.Poll)
	// Given a context (WithContext, or a SpecContext), Gomega would wait
	// until the context ends: for a spec without a SpecTimeout, the whole
	// run's --timeout. A spec that fails must fail within its timeouts.
	EnforceDefaultTimeoutsWhenUsingContexts()
	RunSpecs(t, "kubeharness e2e")
}

// Under parallel Ginkgo (make e2e PROCS=n) the first process starts the
// provider: one control plane and one manager for every process. The others
// connect to it with what it shares: the path of a file only this user can
// read (the credentials stay out of Ginkgo's loopback traffic); the fake
// VirtualMachine driver, which lives in the first process, is steered over
// loopback.
var _ = SynchronizedBeforeSuite(func(ctx SpecContext) []byte {
	var err error
	root, err = repo.Root()
	Expect(err).NotTo(HaveOccurred())
	artifacts = operatortest.ArtifactsDir(root)
	provider, err = operatortest.NewProvider(root, artifacts)
	Expect(err).NotTo(HaveOccurred())
	By("starting the " + provider.Name() + " provider")
	start := time.Now()
	started, err := provider.Start(ctx)
	Expect(err).NotTo(HaveOccurred(), "the %s provider did not come up; its logs are in %s", provider.Name(), artifacts)
	Expect(operatortest.CheckOffers(provider, started)).To(Succeed())
	cluster = newSuiteCluster(started)
	GinkgoWriter.Printf("cluster up: %s %s\n", cluster.Provider, cluster.Version.GitVersion)
	recordRun(root, time.Since(start))
	var fakeURL, fakeToken string
	if cluster.FakeVMs != nil {
		fakeURL, fakeToken, stopFakeVMs, err = vmfixture.ServeFakeVMs(cluster.FakeVMs)
		Expect(err).NotTo(HaveOccurred())
	}
	shared, remove, err := operatortest.ShareCluster(cluster.Cluster, fakeURL, fakeToken)
	Expect(err).NotTo(HaveOccurred())
	removeShared = remove
	return []byte(shared)
}, func(shared []byte) {
	if cluster != nil {
		return // the first process: it started the cluster
	}
	var err error
	root, err = repo.Root()
	Expect(err).NotTo(HaveOccurred())
	artifacts = operatortest.ArtifactsDir(root)
	joined, err := operatortest.SharedCluster(string(shared))
	Expect(err).NotTo(HaveOccurred())
	cluster = newSuiteCluster(joined)
	// Generous: on kind this may build the offline node image from cold
	// caches (minutes) before the cluster and the rollout.
}, NodeTimeout(40*time.Minute))

// recordRun records where the suite runs for the run report
// (harness/report): the provider, the cluster's version, the machine, the
// commit under test and how long the provider took to start.
func recordRun(root string, providerStart time.Duration) {
	AddReportEntry(report.ProviderEntry, cluster.Provider, ReportEntryVisibilityNever)
	AddReportEntry(report.KubernetesVersionEntry, cluster.Version.GitVersion, ReportEntryVisibilityNever)
	AddReportEntry(report.MachineEntry, report.ThisMachine(), ReportEntryVisibilityNever)
	AddReportEntry(report.PhaseEntryPrefix+provider.Name()+" start", providerStart, ReportEntryVisibilityNever)
	commit := os.Getenv("GITHUB_SHA")
	if commit == "" {
		if out, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output(); err == nil {
			commit = strings.TrimSpace(string(out))
		}
	}
	if commit != "" {
		AddReportEntry(report.CommitEntry, commit, ReportEntryVisibilityNever)
	}
}

// Every attempt of a repeated run (make e2e REPEAT=n) keeps its report, so
// that the run report tells a spec that failed once from one that always
// fails.
var _ = suite.RecordAttempts(func() string { return artifacts })

// With make e2e COVER=1, each spec's record of what it made the manager and
// the VirtualMachine controller run (harness/coverage), for make e2e-all
// AFFECTED=REF to choose the specs a change needs.
var _ = coverage.RecordSpecs(coverage.Recording{Dir: func() string { return os.Getenv(specCoverageEnv) }})

// specCoverageEnv names the directory of the per-spec coverage record.
const specCoverageEnv = "KUBEHARNESS_SPEC_COVERAGE"

// stopFakeVMs stops serving the fake driver to the other processes.
var stopFakeVMs func()

// removeShared removes the file the first process shared the cluster in.
var removeShared func() error

// On a failed run, a provider that can export its cluster's own logs (kind:
// journal, kubelet, containerd, every Pod's logs of every node) writes them
// to artifacts/<provider>-logs.
var _ = ReportAfterSuite("cluster logs on failure", func(r Report) {
	le, ok := provider.(hcluster.LogExporter)
	if r.SuiteSucceeded || !ok {
		return
	}
	dir := filepath.Join(artifacts, provider.Name()+"-logs")
	if err := le.ExportLogs(dir); err != nil {
		GinkgoWriter.Printf("exporting %s logs: %v\n", provider.Name(), err)
		return
	}
	GinkgoWriter.Printf("%s logs: %s\n", provider.Name(), dir)
})

// Every process stops the FaultEnv its specs shared; the first stops the
// provider once every process is done.
var _ = SynchronizedAfterSuite(func() {
	Expect(stopFaultEnv()).To(Succeed())
}, func(ctx SpecContext) {
	if removeShared != nil {
		Expect(removeShared()).To(Succeed())
	}
	if stopFakeVMs != nil {
		stopFakeVMs()
	}
	if provider != nil {
		Expect(provider.Stop(ctx)).To(Succeed())
	}
}, NodeTimeout(time.Minute))

// A spec that fails leaves its bundle under artifacts/failures/: the
// objects and events of each namespace it made with enterNamespace (or
// suite.Namespace), written before the namespace is deleted, and the
// operator's log lines during the spec (operatortest.CollectOperatorLogs).
var _ = suite.BundleFailures(suite.Failures{
	Artifacts: suiteArtifacts(),
	Config: func() *rest.Config {
		if cluster == nil {
			return nil
		}
		return cluster.Config
	},
	Collect: operatortest.CollectOperatorLogs(func() *hcluster.Cluster {
		if cluster == nil {
			return nil
		}
		return cluster.Cluster
	}),
})

// suiteArtifacts is the artifacts directory, known before any node runs:
// $ARTIFACTS, or artifacts/ at the repository root.
func suiteArtifacts() string {
	r, err := repo.Root()
	if err != nil {
		return operatortest.ArtifactsDir(".")
	}
	return operatortest.ArtifactsDir(r)
}

// requires skips the running spec unless the cluster offers ability A
// (cluster.Ability), saying what the spec needs, and returns it.
func requires[A any](need string) A {
	GinkgoHelper()
	a, ok := hcluster.Ability[A](cluster.Cluster)
	if !ok {
		Skip(fmt.Sprintf("needs %s: the %s cluster does not offer %T", need, cluster.Provider, a))
	}
	return a
}

// specNamespace gives every spec in the container a namespace of its own.
func specNamespace(prefix string) *string {
	ns := new(string)
	BeforeEach(func(ctx SpecContext) {
		*ns = enterNamespace(ctx, prefix)
	})
	return ns
}

// enterNamespace is a namespace of the running spec's own on the suite's
// cluster (suite.Namespace), labelled as the harness's.
func enterNamespace(ctx context.Context, prefix string, labels ...map[string]string) string {
	GinkgoHelper()
	opts := []suite.NamespaceOption{suite.WithLabels(map[string]string{operatortest.SpecLabel: "true"})}
	for _, l := range labels {
		opts = append(opts, suite.WithLabels(l))
	}
	return suite.Namespace(ctx, cluster.Client, prefix, opts...)
}
