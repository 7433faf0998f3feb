package e2e

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubeharness/kubeharness/internal/deploy"
	"github.com/kubeharness/kubeharness/internal/operatortest"
	"github.com/kubeharness/kubeharness/operator/certs"
)

// Who may read the VirtualMachine controller's Docker client certificate,
// which is the whole Docker API of the host: asked of the API server's
// authorizer (what `kubectl auth can-i --as` asks) for the ServiceAccounts
// config/ binds, against the RBAC the suite installed from config/. The
// Secret's place is read from config/vm, where the Deployment mounts it: a
// Pod mounts Secrets of its own namespace only.
var _ = Describe("The Docker client certificate", labelRBAC, labelVM, labelSecrets, func() {
	ns := specNamespace("docker-creds")

	It("is readable by no ServiceAccount of config/, and the manager writes only its own Secrets", func(ctx SpecContext) {
		secretNS, secretName := dockerCertsSecret()
		GinkgoWriter.Printf("config/vm mounts Secret %s/%s\n", secretNS, secretName)
		manager := saIdentity(certs.DefaultNamespace, deploy.ManagerServiceAccount)
		vmController := saIdentity(deploy.VMNamespace, deploy.VMControllerServiceAccount)

		By("the authorizer granting the manager what its certificate path uses (so the denials below are config/'s, not an authorizer that has not seen it)")
		for _, a := range []authorizationv1.ResourceAttributes{
			secretAttrs(certs.DefaultNamespace, "", "list"),
			secretAttrs(certs.DefaultNamespace, "", "watch"),
			secretAttrs(certs.DefaultNamespace, "", "create"),
			secretAttrs(certs.DefaultNamespace, certs.CASecretName, "patch"),
			secretAttrs(certs.DefaultNamespace, certs.ServingSecretName, "update"),
		} {
			Eventually(func(g Gomega) {
				g.Expect(canI(ctx, g, manager, a)).To(BeTrue(), "the manager may not %s", describeAttrs(a))
			}).WithTimeout(operatortest.RBACPropagation).Should(Succeed())
		}

		By("denying the manager and the VirtualMachine controller every verb on the Docker client certificate")
		for _, who := range []identity{manager, vmController} {
			for _, verb := range []string{"get", "list", "watch", "update", "patch", "delete"} {
				for _, name := range []string{secretName, ""} {
					a := secretAttrs(secretNS, name, verb)
					Expect(canI(ctx, Default, who, a)).To(BeFalse(),
						"%s may %s: the Docker client certificate must be readable only by the Pods that mount it", who.user, describeAttrs(a))
				}
			}
		}

		By("denying the manager writes to Secrets of its namespace other than its own, and any right on a tenant's Secrets")
		for _, a := range []authorizationv1.ResourceAttributes{
			secretAttrs(certs.DefaultNamespace, deploy.VMDockerCertsSecret, "update"),
			secretAttrs(certs.DefaultNamespace, deploy.VMDockerCertsSecret, "patch"),
			secretAttrs(certs.DefaultNamespace, "someone-elses", "update"),
			secretAttrs(certs.DefaultNamespace, "someone-elses", "patch"),
			secretAttrs(certs.DefaultNamespace, certs.CASecretName, "delete"),
			secretAttrs(*ns, "", "list"),
			secretAttrs(*ns, "", "get"),
		} {
			Expect(canI(ctx, Default, manager, a)).To(BeFalse(), "the manager may %s", describeAttrs(a))
		}
	})
})

// dockerCertsSecret is where config/vm's Deployment mounts the Docker
// client certificate from: its namespace and the Secret at DOCKER_CERT_PATH.
func dockerCertsSecret() (namespace, name string) {
	GinkgoHelper()
	objs, err := deploy.Render(root, deploy.VMConfig)
	Expect(err).NotTo(HaveOccurred())
	for _, u := range objs {
		if u.GetKind() != "Deployment" || u.GetName() != deploy.VMControllerDeployment {
			continue
		}
		d := &appsv1.Deployment{}
		Expect(deploy.FromUnstructured(u, d)).To(Succeed())
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Secret != nil && v.Secret.SecretName == deploy.VMDockerCertsSecret {
				return d.Namespace, v.Secret.SecretName
			}
		}
		Fail(fmt.Sprintf("%s's Deployment %s mounts no Secret %s", deploy.VMConfig, d.Name, deploy.VMDockerCertsSecret))
	}
	Fail(fmt.Sprintf("%s renders no Deployment %s", deploy.VMConfig, deploy.VMControllerDeployment))
	return "", ""
}

// identity is a ServiceAccount as the API server authenticates it.
type identity struct {
	user   string
	groups []string
}

func saIdentity(namespace, name string) identity {
	return identity{
		user:   fmt.Sprintf("system:serviceaccount:%s:%s", namespace, name),
		groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}
}

func secretAttrs(namespace, name, verb string) authorizationv1.ResourceAttributes {
	return authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Resource: "secrets", Name: name, Version: corev1.SchemeGroupVersion.Version}
}

func describeAttrs(a authorizationv1.ResourceAttributes) string {
	if a.Name == "" {
		return fmt.Sprintf("%s secrets in %s", a.Verb, a.Namespace)
	}
	return fmt.Sprintf("%s secret %s/%s", a.Verb, a.Namespace, a.Name)
}

// canI asks the API server's authorizer whether who may do a, as `kubectl
// auth can-i --as` does; the suite's admin asks, so no request of who's is
// made (and none is refused).
func canI(ctx context.Context, g Gomega, who identity, a authorizationv1.ResourceAttributes) bool {
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: who.user, Groups: who.groups, ResourceAttributes: &a,
	}}
	g.Expect(cluster.Client.Create(ctx, review)).To(Succeed())
	return review.Status.Allowed
}
