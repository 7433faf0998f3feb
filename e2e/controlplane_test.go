package e2e

import (
	"os"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kubeharness/kubeharness/harness/binaries"
)

var _ = Describe("control plane", labelControlPlane, func() {
	It("reports the Kubernetes version it was built as through /version", func() {
		want := binaries.TrimV(os.Getenv("K8S_VERSION"))
		if want == "" {
			root, err := binaries.RepoRoot()
			Expect(err).NotTo(HaveOccurred())
			lock, err := binaries.LoadLockfile(root)
			Expect(err).NotTo(HaveOccurred())
			want = lock.Default
		}
		want = strings.TrimSuffix(want, ".x")
		Expect(cluster.Version.GitVersion).To(HavePrefix("v"+want), "an unstamped build reports v0.0.0-master and breaks version discovery")
		parts := strings.SplitN(want, ".", 3)
		Expect(cluster.Version.Major).To(Equal(parts[0]))
		Expect(cluster.Version.Minor).To(Equal(parts[1]))
	})
})
