/*
Copyright 2026.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package controller

import (
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubeharness/kubeharness/harness/suite"

	boardv1 "example.com/noticeboard/api/v1"
)

// collectTimeout bounds the namespace and garbage-collection controllers'
// work: their informers sync at start, then each deletion takes them well
// under a second.
const collectTimeout = 30 * time.Second

// Namespace deletion and garbage collection need kube-controller-manager,
// which controller-runtime's envtest does not run; the suite asks the
// drop-in for it (RunControllers in suite_test.go).
var _ = Describe("Deleting what a Notice lives in", func() {
	BeforeEach(func() {
		if os.Getenv("KUBEHARNESS_ENVTEST") == "stock" {
			Skip("controller-runtime's envtest runs no kube-controller-manager: namespaces never finish deleting and nothing collects owned objects")
		}
	})

	It("collects the ConfigMap a Notice owns once the Notice is deleted", func(ctx SpecContext) {
		ns := suite.Namespace(ctx, k8sClient, "collect")
		notice := &boardv1.Notice{
			ObjectMeta: metav1.ObjectMeta{Name: "fire-drill", Namespace: ns},
			Spec:       boardv1.NoticeSpec{Message: "Thursday at 10"},
		}
		Expect(k8sClient.Create(ctx, notice)).To(Succeed())
		r := &NoticeReconciler{Client: k8sClient, Scheme: k8sClient.Scheme()}
		_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(notice)})
		Expect(err).NotTo(HaveOccurred())
		cm := &corev1.ConfigMap{}
		key := types.NamespacedName{Namespace: ns, Name: "fire-drill-notice"}
		Expect(k8sClient.Get(ctx, key, cm)).To(Succeed())
		Expect(metav1.IsControlledBy(cm, notice)).To(BeTrue(), "the ConfigMap is controlled by the Notice")

		By("deleting the Notice: the garbage collector deletes what it owns")
		Expect(k8sClient.Delete(ctx, notice)).To(Succeed())
		Eventually(func() error { return k8sClient.Get(ctx, key, &corev1.ConfigMap{}) }).
			WithContext(ctx).WithTimeout(collectTimeout).
			Should(Satisfy(apierrors.IsNotFound), "the owned ConfigMap %s is collected", key)
	})

	It("deletes a namespace with what is in it", func(ctx SpecContext) {
		ns := suite.Namespace(ctx, k8sClient, "gone")
		notice := &boardv1.Notice{
			ObjectMeta: metav1.ObjectMeta{Name: "moving-out", Namespace: ns},
			Spec:       boardv1.NoticeSpec{Message: "Last day on Friday"},
		}
		Expect(k8sClient.Create(ctx, notice)).To(Succeed())

		By("deleting the namespace: the namespace controller empties it and removes it")
		Expect(k8sClient.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		Eventually(func() error { return k8sClient.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}) }).
			WithContext(ctx).WithTimeout(collectTimeout).
			Should(Satisfy(apierrors.IsNotFound), "namespace %s is gone", ns)
		Expect(apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(notice), &boardv1.Notice{}))).
			To(BeTrue(), "the Notice went with its namespace")
	})
})
