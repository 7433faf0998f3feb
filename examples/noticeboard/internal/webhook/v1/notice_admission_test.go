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
	"os"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/harness/suite"

	boardv1 "example.com/noticeboard/api/v1"
)

// These specs go through the API server, so they prove the webhook
// configuration, its TLS serving certificate and the handlers together.
var _ = Describe("Notice admission through the API server", func() {
	var ns string

	BeforeEach(func(ctx SpecContext) {
		ns = suite.Namespace(ctx, k8sClient, "admission")
	})

	It("defaults an empty message to the Notice's name, trimmed", func(ctx SpecContext) {
		notice := &boardv1.Notice{ObjectMeta: metav1.ObjectMeta{Name: "blank", Namespace: ns},
			Spec: boardv1.NoticeSpec{Message: "   "}}
		Expect(k8sClient.Create(ctx, notice)).To(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(notice), notice)).To(Succeed())
		Expect(notice.Spec.Message).To(Equal("Notice blank"))
	})

	It("denies a message over 280 characters, naming spec.message", func(ctx SpecContext) {
		notice := &boardv1.Notice{ObjectMeta: metav1.ObjectMeta{Name: "long", Namespace: ns},
			Spec: boardv1.NoticeSpec{Message: strings.Repeat("a", MaxMessageLength+1)}}
		err := k8sClient.Create(ctx, notice)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "expected Invalid, got %v", err)
		Expect(err.Error()).To(ContainSubstring("spec.message"))
	})
})

// A spec that fails when NOTICEBOARD_FAIL_ON_PURPOSE=1, so that CI can
// check the failure bundle a failed spec leaves (hack/example-test.sh);
// skipped otherwise.
var _ = Describe("A failing spec", Label("fail-on-purpose"), func() {
	It("fails on purpose after the webhooks admitted a Notice", func(ctx SpecContext) {
		if os.Getenv("NOTICEBOARD_FAIL_ON_PURPOSE") != "1" {
			Skip("set NOTICEBOARD_FAIL_ON_PURPOSE=1 to fail this spec and check its failure bundle")
		}
		ns := suite.Namespace(ctx, k8sClient, "fails")
		notice := &boardv1.Notice{ObjectMeta: metav1.ObjectMeta{Name: "left-for-the-bundle", Namespace: ns}}
		Expect(k8sClient.Create(ctx, notice)).To(Succeed())
		Fail("failing on purpose: the bundle must hold Notice " + ns + "/left-for-the-bundle and the webhook's lines about it")
	})
})
