package e2e

import (
	"context"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hcluster "github.com/kubeharness/kubeharness/harness/cluster"
	"github.com/kubeharness/kubeharness/internal/operatortest"
)

var _ = Describe("the existing-cluster provider", labelProviders, labelEnvtestOnly, func() {
	It("refuses a cluster without the disposable marker, and says how to mark one", func(ctx SpecContext) {
		requires[operatortest.Throwaway]("a cluster of this run only: the spec toggles the disposable marker of the cluster under test")
		marker := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: hcluster.DisposableMarker}}
		Expect(client.IgnoreNotFound(cluster.Client.Delete(ctx, marker))).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(cluster.Client.Delete(ctx, marker))).To(Succeed())
		})
		kubeconfig := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
		writeKubeconfig(kubeconfig)

		p := &operatortest.ExistingProvider{Kubeconfig: kubeconfig}
		_, err := p.Start(ctx)
		Expect(err).To(MatchError(SatisfyAll(
			ContainSubstring("refusing to run"),
			ContainSubstring("kube-system/"+hcluster.DisposableMarker),
			ContainSubstring("kubectl -n kube-system create configmap"),
		)))

		By("getting past the check once the cluster is marked")
		Expect(hcluster.MarkDisposable(ctx, cluster.Client, "e2e spec")).To(Succeed())
		short, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err = p.Start(short)
		Expect(err).To(HaveOccurred(), "envtest has no deployed manager to wait for")
		Expect(err.Error()).NotTo(ContainSubstring("refusing to run"))
	})
})

// writeKubeconfig writes a kubeconfig for the cluster under test.
func writeKubeconfig(path string) {
	GinkgoHelper()
	c := cluster.Config
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.CAData}
	cfg.AuthInfos["e2e"] = &clientcmdapi.AuthInfo{ClientCertificateData: c.CertData, ClientKeyData: c.KeyData, Token: c.BearerToken}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "e2e"}
	cfg.CurrentContext = "e2e"
	Expect(clientcmd.WriteToFile(*cfg, path)).To(Succeed())
	_, err := os.Stat(path)
	Expect(err).NotTo(HaveOccurred())
}
