// Package smoke holds the kind smoke specs: does a kind cluster made from
// kind-config.yaml (with the offline node image in our own CI) work as a
// cluster? Nodes Ready, DNS, a Pod from an image built in the run, and a
// Service across nodes. `make kind-smoke` runs them against the cluster
// `make kind-up` created.
package smoke

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeharness/kubeharness/harness/kind"
	"github.com/kubeharness/kubeharness/harness/suite"
	"github.com/kubeharness/kubeharness/internal/deploy"
	"github.com/kubeharness/kubeharness/internal/operatortest"
	"github.com/kubeharness/kubeharness/internal/repo"
)

var (
	root      string
	artifacts string
	cluster   *kind.Cluster
	config    *rest.Config
	clientset kubernetes.Interface
	// smokeImage is built from e2e/images/smoke in this run.
	smokeImage string
)

// A spec that fails leaves the objects and events of its namespace in
// artifacts/failures/<spec>/, written before the namespace is deleted.
var _ = suite.BundleFailures(suite.Failures{
	Artifacts: smokeArtifacts(),
	Config:    func() *rest.Config { return config },
})

// smokeArtifacts is the artifacts directory, known before any node runs.
func smokeArtifacts() string {
	r, err := repo.Root()
	if err != nil {
		return operatortest.ArtifactsDir(".")
	}
	return operatortest.ArtifactsDir(r)
}

func TestSmoke(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "kubeharness kind smoke")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	var err error
	root, err = repo.Root()
	Expect(err).NotTo(HaveOccurred())
	artifacts = operatortest.ArtifactsDir(root)
	cluster = operatortest.NewKindCluster(root, GinkgoWriter)
	exists, err := cluster.Exists()
	Expect(err).NotTo(HaveOccurred())
	Expect(exists).To(BeTrue(), "no kind cluster %q: create it with `make kind-up`", cluster.Name)
	kubeconfig, err := cluster.Kubeconfig()
	Expect(err).NotTo(HaveOccurred())
	config, err = clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	clientset, err = kubernetes.NewForConfig(config)
	Expect(err).NotTo(HaveOccurred())

	By("building the smoke image: a static binary on scratch, nothing pulled")
	images, err := deploy.WorkloadImages(ctx, root)
	Expect(err).NotTo(HaveOccurred())
	smokeImage = deploy.SmokeImage
	By("loading it into every node")
	Expect(cluster.LoadImages(ctx, images...)).To(Succeed())
}, NodeTimeout(5*time.Minute))

// On a failed run, kind's own logs of every node go to artifacts/kind-logs.
var _ = ReportAfterSuite("kind logs on failure", func(r Report) {
	if r.SuiteSucceeded || cluster == nil {
		return
	}
	dir := filepath.Join(artifacts, "kind-logs")
	if err := cluster.ExportLogs(dir); err != nil {
		fmt.Fprintf(GinkgoWriter, "exporting kind logs: %v\n", err)
		return
	}
	fmt.Fprintf(GinkgoWriter, "kind logs: %s\n", dir)
})
