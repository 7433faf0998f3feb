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
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubeharness/kubeharness/harness/suite"

	boardv1 "example.com/noticeboard/api/v1"
)

var _ = Describe("Publishing a Notice", func() {
	It("writes its message into a ConfigMap it owns and reports it Available", func(ctx SpecContext) {
		ns := suite.Namespace(ctx, k8sClient, "publish")

		notice := &boardv1.Notice{
			ObjectMeta: metav1.ObjectMeta{Name: "opening-hours", Namespace: ns},
			Spec:       boardv1.NoticeSpec{Message: "Open 9 to 5"},
		}
		Expect(k8sClient.Create(ctx, notice)).To(Succeed())

		r := &NoticeReconciler{Client: k8sClient, Scheme: k8sClient.Scheme()}
		_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(notice)})
		Expect(err).NotTo(HaveOccurred())

		cm := &corev1.ConfigMap{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "opening-hours-notice"}, cm)).To(Succeed())
		Expect(cm.Data).To(HaveKeyWithValue("message", "Open 9 to 5"))
		Expect(metav1.IsControlledBy(cm, notice)).To(BeTrue(), "the ConfigMap is controlled by the Notice")

		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(notice), notice)).To(Succeed())
		Expect(meta.IsStatusConditionTrue(notice.Status.Conditions, "Available")).To(BeTrue())

		By("an edited message is published again")
		notice.Spec.Message = "Closed on Sundays"
		Expect(k8sClient.Update(ctx, notice)).To(Succeed())
		_, err = r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(notice)})
		Expect(err).NotTo(HaveOccurred())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
		Expect(cm.Data).To(HaveKeyWithValue("message", "Closed on Sundays"))
	})
})
