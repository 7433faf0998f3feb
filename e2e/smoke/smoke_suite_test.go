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

	"github.com/kubeharness/kubeharness/e2e/framework"
	"github.com/kubeharness/kubeharness/e2e/framework/kindcluster"
	"github.com/kubeharness/kubeharness/harness/binaries"
)

var (
	root      string
	artifacts string
	kind      *kindcluster.Cluster
	config    *rest.Config
	clientset kubernetes.Interface
	// smokeImage is built from e2e/images/smoke in this run.
	smokeImage string
)

func TestSmoke(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "kubeharness kind smoke")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	var err error
	root, err = binaries.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	artifacts = framework.ArtifactsDir(root)
	kind = kindcluster.New(root, kindcluster.Name())
	exists, err := kind.Exists()
	Expect(err).NotTo(HaveOccurred())
	Expect(exists).To(BeTrue(), "no kind cluster %q: create it with `make kind-up`", kind.Name)
	kubeconfig, err := kind.Kubeconfig()
	Expect(err).NotTo(HaveOccurred())
	config, err = clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	clientset, err = kubernetes.NewForConfig(config)
	Expect(err).NotTo(HaveOccurred())

	By("building the smoke image: a static binary on scratch, nothing pulled")
	images, err := framework.WorkloadImages(ctx, root)
	Expect(err).NotTo(HaveOccurred())
	smokeImage = framework.SmokeImage
	By("loading it into every node")
	Expect(kind.LoadImages(ctx, images...)).To(Succeed())
}, NodeTimeout(5*time.Minute))

// On a failed run, kind's own logs of every node go to artifacts/kind-logs.
var _ = ReportAfterSuite("kind logs on failure", func(r Report) {
	if r.SuiteSucceeded || kind == nil {
		return
	}
	dir := filepath.Join(artifacts, "kind-logs")
	if err := kind.ExportLogs(dir); err != nil {
		fmt.Fprintf(GinkgoWriter, "exporting kind logs: %v\n", err)
		return
	}
	fmt.Fprintf(GinkgoWriter, "kind logs: %s\n", dir)
})
