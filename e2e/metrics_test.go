package e2e

import (
	"context"
	"crypto/tls"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var _ = Describe("manager metrics", labelMetrics, func() {
	ns := specNamespace("metrics")

	BeforeEach(func() {
		if cluster.MetricsAddr == "" {
			Skip("the manager's metrics address is not reachable on " + cluster.Provider)
		}
	})

	// scrape GETs /metrics with an optional bearer token. The server's
	// certificate is self-signed: this checks who may read, not TLS.
	scrape := func(token string) int {
		req, err := http.NewRequest(http.MethodGet, "https://"+cluster.MetricsAddr+"/metrics", nil)
		Expect(err).NotTo(HaveOccurred())
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed metrics certificate
		resp, err := hc.Do(req)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		return resp.StatusCode
	}
	tokenFor := func(ctx context.Context, name string) string {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: *ns}}
		Expect(cluster.Client.Create(ctx, sa)).To(Succeed())
		tr := &authenticationv1.TokenRequest{}
		Expect(cluster.Client.SubResource("token").Create(ctx, sa, tr)).To(Succeed())
		return tr.Status.Token
	}

	It("serves /metrics over HTTPS only to callers allowed to get it", func(ctx SpecContext) {
		Expect(scrape("")).To(Equal(http.StatusUnauthorized))
		stranger := tokenFor(ctx, "stranger")
		Expect(scrape(stranger)).To(Equal(http.StatusForbidden))

		reader := tokenFor(ctx, "reader")
		role := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "kubeharness-metrics-reader-" + *ns},
			Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
		}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "reader", Namespace: *ns}},
		}
		for _, obj := range []client.Object{role, binding} {
			Expect(cluster.Client.Create(ctx, obj)).To(Succeed())
			DeferCleanup(func(ctx context.Context) {
				Expect(client.IgnoreNotFound(cluster.Client.Delete(ctx, obj))).To(Succeed())
			})
		}
		Eventually(func() int { return scrape(reader) }).Should(Equal(http.StatusOK))
	})
})
