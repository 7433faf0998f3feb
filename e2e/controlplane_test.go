package e2e

import (
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kubeharness/kubeharness/harness/versions"
	"github.com/kubeharness/kubeharness/internal/repo"
)

var _ = Describe("control plane", labelControlPlane, func() {
	It("reports the Kubernetes version it was built as through /version", func() {
		want, err := versions.FromEnv()
		Expect(err).NotTo(HaveOccurred())
		if !want.Explicit() {
			root, err := repo.Root()
			Expect(err).NotTo(HaveOccurred())
			lock, err := versions.LoadLockfile(root)
			Expect(err).NotTo(HaveOccurred())
			want = versions.Exactly(lock.Default)
		}
		got, err := versions.Parse(cluster.Version.GitVersion)
		Expect(err).NotTo(HaveOccurred(), "an unstamped build reports v0.0.0-master and breaks version discovery")
		Expect(want.Matches(got)).To(BeTrue(), "the control plane reports %s; %s asks for another", got, want)
		Expect(cluster.Version.Major).To(Equal(strconv.Itoa(got.Major())))
		Expect(cluster.Version.Minor).To(Equal(strconv.Itoa(got.Minor())))
	})
})

// clusterVersion is the Kubernetes version the cluster reports through
// /version, for the control planes specs start beside it.
func clusterVersion() versions.Version {
	GinkgoHelper()
	v, err := versions.Parse(cluster.Version.GitVersion)
	Expect(err).NotTo(HaveOccurred())
	return v
}
