package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kubeharness/kubeharness/e2e/framework"
	"github.com/kubeharness/kubeharness/e2e/framework/binaries"
)

var (
	provider  framework.Provider
	cluster   *framework.Cluster
	artifacts string
	// root is the repository root: config/, versions.yaml, bin/.
	root string
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	// Every Eventually waits up to framework.Reconcile and every Consistently
	// holds for framework.NoHotLoopWindow, polling at framework.Poll, unless
	// a spec names another of framework's timeouts.
	SetDefaultEventuallyTimeout(framework.Reconcile)
	SetDefaultEventuallyPollingInterval(framework.Poll)
	SetDefaultConsistentlyDuration(framework.NoHotLoopWindow)
	SetDefaultConsistentlyPollingInterval(framework.Poll)
	RunSpecs(t, "kubeharness e2e")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	var err error
	root, err = binaries.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	artifacts = framework.ArtifactsDir(root)
	provider, err = framework.NewProvider(root, artifacts)
	Expect(err).NotTo(HaveOccurred())
	By("starting the " + provider.Name() + " provider")
	cluster, err = provider.Start(ctx)
	Expect(err).NotTo(HaveOccurred(), "the %s provider did not come up; its logs are in %s", provider.Name(), artifacts)
	GinkgoWriter.Printf("cluster up: %s %s\n", cluster.Provider, cluster.Version.GitVersion)
	// Generous: on kind this may build the offline node image from cold
	// caches (minutes) before the cluster and the rollout.
}, NodeTimeout(40*time.Minute))

// On a failed run, a provider that can export its cluster's own logs (kind:
// journal, kubelet, containerd, every Pod's logs of every node) writes them
// to artifacts/<provider>-logs.
var _ = ReportAfterSuite("cluster logs on failure", func(r Report) {
	le, ok := provider.(framework.LogExporter)
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

var _ = AfterSuite(func(ctx SpecContext) {
	if provider != nil {
		Expect(provider.Stop(ctx)).To(Succeed())
	}
}, NodeTimeout(time.Minute))

// specNamespace gives every spec in the container a namespace of its own and,
// when a spec fails, writes its failure bundle under artifacts/failures/.
func specNamespace(prefix string) *string {
	ns := new(string)
	BeforeEach(func(ctx SpecContext) {
		start := time.Now()
		name, err := framework.CreateNamespace(ctx, cluster.Client, prefix)
		Expect(err).NotTo(HaveOccurred())
		*ns = name
		DeferCleanup(func(ctx context.Context) {
			if report := CurrentSpecReport(); report.Failed() {
				dir := framework.BundleDir(artifacts, report.FullText())
				b := framework.Bundle{Cluster: cluster, Namespace: name, Start: start, End: time.Now()}
				if err := b.Write(ctx, dir); err != nil {
					GinkgoWriter.Printf("failure bundle incomplete: %v\n", err)
				}
				GinkgoWriter.Printf("failure bundle: %s\n", dir)
			}
			Expect(framework.DeleteNamespace(ctx, cluster.Client, name)).To(Succeed())
		})
	})
	return ns
}
