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

package v1

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	boardv1 "example.com/noticeboard/api/v1"
)

// These specs go through the API server, so they prove the webhook
// configuration, its TLS serving certificate and the handlers together.
var _ = Describe("Notice admission through the API server", func() {
	var ns *corev1.Namespace

	BeforeEach(func(ctx SpecContext) {
		ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "admission-"}}
		Expect(k8sClient.Create(ctx, ns)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(k8sClient.Delete(ctx, ns)).To(Succeed()) })
	})

	It("defaults an empty message to the Notice's name, trimmed", func(ctx SpecContext) {
		notice := &boardv1.Notice{ObjectMeta: metav1.ObjectMeta{Name: "blank", Namespace: ns.Name},
			Spec: boardv1.NoticeSpec{Message: "   "}}
		Expect(k8sClient.Create(ctx, notice)).To(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(notice), notice)).To(Succeed())
		Expect(notice.Spec.Message).To(Equal("Notice blank"))
	})

	It("denies a message over 280 characters, naming spec.message", func(ctx SpecContext) {
		notice := &boardv1.Notice{ObjectMeta: metav1.ObjectMeta{Name: "long", Namespace: ns.Name},
			Spec: boardv1.NoticeSpec{Message: strings.Repeat("a", MaxMessageLength+1)}}
		err := k8sClient.Create(ctx, notice)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "expected Invalid, got %v", err)
		Expect(err.Error()).To(ContainSubstring("spec.message"))
	})
})
