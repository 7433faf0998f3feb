package suite_test

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"

	"github.com/kubeharness/kubeharness/harness/suite"
)

func TestSuite(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "harness/suite")
}

var _ = Describe("Share and Connect", func() {
	cfg := &rest.Config{
		Host:            "https://127.0.0.1:6443",
		TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca"), CertData: []byte("cert"), KeyData: []byte("key")},
	}

	It("pass only a handle; the credentials stay in a 0600 file in a 0700 directory", func() {
		shared, err := suite.Share(cfg)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(shared)).To(MatchRegexp(`^kubeharness-share/v1 [0-9a-f]{64} /`))
		Expect(string(shared)).NotTo(ContainSubstring("key"))
		_, path := handleFields(string(shared))

		fi, err := os.Stat(path)
		Expect(err).NotTo(HaveOccurred())
		Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o600)))
		di, err := os.Stat(filepath.Dir(path))
		Expect(err).NotTo(HaveOccurred())
		Expect(di.Mode().Perm()).To(Equal(os.FileMode(0o700)))

		got, err := suite.Connect(shared)
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Host).To(Equal(cfg.Host))
		Expect(got.CAData).To(Equal(cfg.CAData))
		Expect(got.CertData).To(Equal(cfg.CertData))
		Expect(got.KeyData).To(Equal(cfg.KeyData))
	})

	It("refuses a shared file others could read", func() {
		shared, err := suite.Share(cfg)
		Expect(err).NotTo(HaveOccurred())
		_, path := handleFields(string(shared))
		Expect(os.Chmod(path, 0o644)).To(Succeed())
		_, err = suite.Connect(shared)
		Expect(err).To(MatchError(ContainSubstring("must have mode -rw-------")))
		Expect(os.Chmod(path, 0o600)).To(Succeed())
		Expect(os.Chmod(filepath.Dir(path), 0o755)).To(Succeed())
		_, err = suite.Connect(shared)
		Expect(err).To(MatchError(ContainSubstring("must have mode drwx------")))
	})

	It("refuses what Share did not return, saying so", func() {
		_, err := suite.Connect([]byte("relative/kubeconfig"))
		Expect(err).To(MatchError(ContainSubstring("not what Share returns")))
		_, err = suite.Share(&rest.Config{})
		Expect(err).To(MatchError(ContainSubstring("Host is empty")))
	})
})

var _ = Describe("SpecNamespaces", func() {
	It("finds the namespaces a report records", func() {
		AddReportEntry("kubeharness/namespace", "ns-a", ReportEntryVisibilityNever)
		Expect(suite.SpecNamespaces(CurrentSpecReport())).To(Equal([]string{"ns-a"}))
	})
})
