package e2e

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/internal/operatortest"
	. "github.com/kubeharness/kubeharness/internal/testutil"
	opsv1 "github.com/kubeharness/kubeharness/operator/api/ops/v1"
	"github.com/kubeharness/kubeharness/operator/certs"
	"github.com/kubeharness/kubeharness/operator/controller"
)

var _ = Describe("Playbook", labelPlaybook, func() {
	ns := specNamespace("playbook")

	get := func(g Gomega, ctx SpecContext, name string) *opsv1.Playbook {
		pb := &opsv1.Playbook{}
		g.Expect(cluster.Client.Get(ctx, client.ObjectKey{Namespace: *ns, Name: name}, pb)).To(Succeed())
		return pb
	}
	gone := func(ctx SpecContext, obj client.Object) func() error {
		return func() error {
			err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			return fmt.Errorf("%T %s still exists (finalizers %v, deletionTimestamp %v)", obj, obj.GetName(), obj.GetFinalizers(), obj.GetDeletionTimestamp())
		}
	}
	notes := func(pb *opsv1.Playbook) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: pb.Namespace, Name: pb.NotesConfigMapName()}}
	}
	// setProgress writes status.progress through the status subresource, as
	// whoever reads the Playbook would.
	setProgress := func(ctx SpecContext, pb *opsv1.Playbook, progress int32) error {
		patch := client.MergeFrom(pb.DeepCopy())
		pb.Status.Progress = progress
		return cluster.Client.Status().Patch(ctx, pb, patch)
	}
	// reconciled waits until the controller has added its finalizer and the
	// notes ConfigMap, and returns the Playbook as it then is.
	reconciled := func(ctx SpecContext, name string) *opsv1.Playbook {
		var pb *opsv1.Playbook
		Eventually(func(g Gomega) {
			pb = get(g, ctx, name)
			g.Expect(pb.Finalizers).To(ContainElement(opsv1.CleanupFinalizer))
			g.Expect(meta.IsStatusConditionTrue(pb.Status.Conditions, opsv1.ConditionReady)).To(BeTrue(), "Ready condition: %+v", pb.Status.Conditions)
		}).Should(Succeed())
		return pb
	}

	Context("defaulting", func() {
		It("trims the abstract", func(ctx SpecContext) {
			pb := MakePlaybook("trimmed", *ns).Abstract("  \tA guide to on-call\n ").Obj()
			Expect(cluster.Client.Create(ctx, pb)).To(Succeed())
			Expect(pb.Spec.Abstract).To(Equal("A guide to on-call"))
		})

		It("names an empty abstract after the Playbook", func(ctx SpecContext) {
			pb := MakePlaybook("runbook", *ns).Obj()
			Expect(cluster.Client.Create(ctx, pb)).To(Succeed())
			Expect(pb.Spec.Abstract).To(Equal("Playbook runbook"))
		})

		It("treats a whitespace-only abstract as empty", func(ctx SpecContext) {
			pb := MakePlaybook("blank", *ns).Abstract("   ").Obj()
			Expect(cluster.Client.Create(ctx, pb)).To(Succeed())
			Expect(pb.Spec.Abstract).To(Equal("Playbook blank"))
		})

		It("defaults on update too", func(ctx SpecContext) {
			pb := MakePlaybook("updated", *ns).Abstract("first").Obj()
			Expect(cluster.Client.Create(ctx, pb)).To(Succeed())
			Eventually(func() error {
				cur := &opsv1.Playbook{}
				if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(pb), cur); err != nil {
					return err
				}
				cur.Spec.Abstract = " second "
				if err := cluster.Client.Update(ctx, cur); err != nil {
					return err
				}
				pb = cur
				return nil
			}).Should(Succeed())
			Expect(pb.Spec.Abstract).To(Equal("second"))
		})

		It("keeps deletionProtection false unless set", func(ctx SpecContext) {
			pb := MakePlaybook("unprotected", *ns).Obj()
			Expect(cluster.Client.Create(ctx, pb)).To(Succeed())
			Expect(pb.Spec.DeletionProtection).To(BeFalse())
		})
	})

	Context("validation", func() {
		DescribeTable("denies an abstract containing the word yellow, naming spec.abstract",
			func(ctx SpecContext, abstract string) {
				err := cluster.Client.Create(ctx, MakePlaybook("yellow", *ns).Abstract(abstract).Obj())
				Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
				Expect(err.Error()).To(ContainSubstring("spec.abstract"))
				Expect(err.Error()).To(ContainSubstring(`must not contain the word "yellow"`))
			},
			Entry("lower case", "a yellow book"),
			Entry("upper case", "YELLOW"),
			Entry("mixed case at the end", "Mostly Yellow"),
			Entry("next to punctuation", "yellow-covered"),
		)

		It("allows words that merely contain yellow", func(ctx SpecContext) {
			Expect(cluster.Client.Create(ctx, MakePlaybook("stone", *ns).Abstract("Yellowstone trip").Obj())).To(Succeed())
		})

		It("denies an update to a yellow abstract", func(ctx SpecContext) {
			pb := MakePlaybook("turns-yellow", *ns).Abstract("blue").Obj()
			Expect(cluster.Client.Create(ctx, pb)).To(Succeed())
			patch := client.MergeFrom(pb.DeepCopy())
			pb.Spec.Abstract = "yellow now"
			err := cluster.Client.Patch(ctx, pb, patch)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
			Expect(err.Error()).To(ContainSubstring("spec.abstract"))
		})

		It("rejects an abstract too long for its notes ConfigMap without echoing it back", func(ctx SpecContext) {
			huge := strings.Repeat("a long story ", 90_000) // about 1.1 MB
			err := cluster.Client.Create(ctx, MakePlaybook("novel", *ns).Abstract(huge).Obj())
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
			Expect(err.Error()).To(ContainSubstring("spec.abstract"))
			Expect(len(err.Error())).To(BeNumerically("<", 2048), "the denial echoes the abstract: %d bytes", len(err.Error()))
		})

		It("lets a Playbook that predates a rule be labelled, finalized and deleted", Serial, func(ctx SpecContext) {
			const predates = "kubeharness.dev/e2e-predates-rule"
			key := client.ObjectKey{Name: certs.ValidatingWebhookConfigurationName}
			setSelector := func(ctx context.Context, sel *metav1.LabelSelector) {
				Eventually(func() error {
					vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
					if err := cluster.Client.Get(ctx, key, vwc); err != nil {
						return err
					}
					for i := range vwc.Webhooks {
						if vwc.Webhooks[i].Name == "vplaybook.kubeharness.dev" {
							vwc.Webhooks[i].ObjectSelector = sel
						}
					}
					return cluster.Client.Update(ctx, vwc)
				}).Should(Succeed())
			}
			By("admitting a yellow Playbook as if the rule were newer than it: the validating webhook skips it for a moment")
			setSelector(ctx, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: predates, Operator: metav1.LabelSelectorOpDoesNotExist}}})
			DeferCleanup(setSelector, &metav1.LabelSelector{})
			pb := MakePlaybook("legacy", *ns).Abstract("a yellow book").Obj()
			pb.Labels = map[string]string{predates: "true"}
			Eventually(func() error { return cluster.Client.Create(ctx, pb.DeepCopy()) }).
				WithTimeout(operatortest.Reconcile).Should(Succeed())
			setSelector(ctx, &metav1.LabelSelector{})
			Eventually(func() error {
				probe := MakePlaybook("probe", *ns).Abstract("yellow").Obj()
				probe.Labels = map[string]string{predates: "true"}
				return cluster.Client.Create(ctx, probe, client.DryRunAll)
			}).Should(MatchError(ContainSubstring("yellow")),
				"the rule is back in force")

			By("labelling it: an update that leaves the abstract alone")
			Eventually(func() error {
				cur := &opsv1.Playbook{}
				if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(pb), cur); err != nil {
					return err
				}
				cur.Labels = map[string]string{"team": "ops"}
				return cluster.Client.Update(ctx, cur)
			}).Should(Succeed())
			reconciled(ctx, pb.Name)

			By("deleting it: the controller's finalizer removal must be admitted")
			Expect(cluster.Client.Delete(ctx, pb)).To(Succeed())
			Eventually(gone(ctx, pb)).Should(Succeed())
		})

		DescribeTable("rejects status.progress outside 0..100 in the schema",
			func(ctx SpecContext, progress int32) {
				pb := MakePlaybook("progress", *ns).Obj()
				Expect(cluster.Client.Create(ctx, pb)).To(Succeed())
				err := setProgress(ctx, pb, progress)
				Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
				Expect(err.Error()).To(ContainSubstring("status.progress"))
			},
			Entry("above 100", int32(101)),
			Entry("negative", int32(-1)),
		)

		It("accepts progress at both bounds", func(ctx SpecContext) {
			pb := MakePlaybook("bounds", *ns).Obj()
			Expect(cluster.Client.Create(ctx, pb)).To(Succeed())
			Expect(setProgress(ctx, pb, 0)).To(Succeed())
			Expect(setProgress(ctx, pb, 99)).To(Succeed())
		})
	})

	Context("controller", func() {
		It("keeps a notes ConfigMap owned by the Playbook", func(ctx SpecContext) {
			pb := MakePlaybook("noted", *ns).Abstract("first draft").Obj()
			Expect(cluster.Client.Create(ctx, pb)).To(Succeed())
			pb = reconciled(ctx, pb.Name)
			cm := notes(pb)
			Eventually(func(g Gomega) {
				g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
				g.Expect(cm.Data).To(HaveKeyWithValue(controller.NotesKeyAbstract, "first draft"))
				g.Expect(metav1.IsControlledBy(cm, pb)).To(BeTrue(), "owner references: %+v", cm.OwnerReferences)
			}).Should(Succeed())

			By("following an abstract change")
			patch := client.MergeFrom(pb.DeepCopy())
			pb.Spec.Abstract = "second draft"
			Expect(cluster.Client.Patch(ctx, pb, patch)).To(Succeed())
			Eventually(func(g Gomega) {
				g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
				g.Expect(cm.Data).To(HaveKeyWithValue(controller.NotesKeyAbstract, "second draft"))
			}).Should(Succeed())
		})
	})

	Context("deletion", labelDeletion, func() {
		It("records an Event and deletes a Playbook read to 100%, notes and all", func(ctx SpecContext) {
			pb := MakePlaybook("finished", *ns).Abstract("short read").Obj()
			Expect(cluster.Client.Create(ctx, pb)).To(Succeed())
			pb = reconciled(ctx, pb.Name)
			cm := notes(pb)
			Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())

			Expect(setProgress(ctx, pb, opsv1.ProgressComplete)).To(Succeed())
			Eventually(gone(ctx, pb)).Should(Succeed())
			Eventually(gone(ctx, cm)).Should(Succeed())
			Eventually(func(g Gomega) {
				events := &corev1.EventList{}
				g.Expect(cluster.Client.List(ctx, events, client.InNamespace(*ns))).To(Succeed())
				g.Expect(events.Items).To(ContainElement(SatisfyAll(
					HaveField("InvolvedObject.Name", pb.Name),
					HaveField("InvolvedObject.Kind", "Playbook"),
					HaveField("Reason", controller.ReasonFinished),
					HaveField("Type", corev1.EventTypeNormal),
				)))
			}).Should(Succeed())
		})

		It("runs the finalizer when a user deletes a Playbook", func(ctx SpecContext) {
			pb := MakePlaybook("deleted", *ns).Obj()
			Expect(cluster.Client.Create(ctx, pb)).To(Succeed())
			pb = reconciled(ctx, pb.Name)
			cm := notes(pb)
			Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())

			Expect(cluster.Client.Delete(ctx, pb)).To(Succeed())
			Eventually(gone(ctx, cm)).Should(Succeed())
			Eventually(gone(ctx, pb)).Should(Succeed())
		})
	})

	Context("delete validation", labelDeleteValidation, func() {
		BeforeEach(func() {
			if ok, why := operatortest.SupportsDeleteValidation(cluster.Version); !ok {
				Skip(why)
			}
		})

		It("denies deleting a protected Playbook, says how to lift it, and allows it after", func(ctx SpecContext) {
			pb := MakePlaybook("protected", *ns).Protected(true).Obj()
			Expect(cluster.Client.Create(ctx, pb)).To(Succeed())
			pb = reconciled(ctx, pb.Name)

			err := cluster.Client.Delete(ctx, pb)
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want Forbidden, got %v", err)
			Expect(err.Error()).To(ContainSubstring("spec.deletionProtection is true"))
			Expect(err.Error()).To(ContainSubstring(`"deletionProtection":false`), "the denial must say how to lift the protection")
			Consistently(func(g Gomega) {
				g.Expect(get(g, ctx, pb.Name).DeletionTimestamp).To(BeNil())
			}).WithTimeout(operatortest.Poll * 10).Should(Succeed())

			By("lifting the protection")
			patch := client.MergeFrom(pb.DeepCopy())
			pb.Spec.DeletionProtection = false
			Expect(cluster.Client.Patch(ctx, pb, patch)).To(Succeed())
			Expect(cluster.Client.Delete(ctx, pb)).To(Succeed())
			Eventually(gone(ctx, pb)).Should(Succeed())
			Eventually(gone(ctx, notes(pb))).Should(Succeed())
		})

		It("does not hot-loop when its own delete of a finished protected Playbook is denied", labelSlow, labelDeletion, func(ctx SpecContext) {
			pb := MakePlaybook("stuck", *ns).Protected(true).Obj()
			Expect(cluster.Client.Create(ctx, pb)).To(Succeed())
			pb = reconciled(ctx, pb.Name)
			Expect(setProgress(ctx, pb, opsv1.ProgressComplete)).To(Succeed())

			Eventually(func(g Gomega) {
				pb = get(g, ctx, pb.Name)
				c := meta.FindStatusCondition(pb.Status.Conditions, opsv1.ConditionFinished)
				g.Expect(c).NotTo(BeNil())
				g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(c.Reason).To(Equal(controller.ReasonDeletionDenied))
				g.Expect(c.Message).To(ContainSubstring("deletionProtection"))
			}).Should(Succeed())

			rv := pb.ResourceVersion
			Consistently(func(g Gomega) {
				g.Expect(get(g, ctx, pb.Name).ResourceVersion).To(Equal(rv), "the controller keeps rewriting the Playbook")
			}).Should(Succeed())

			By("lifting the protection, after which the controller finishes the job")
			patch := client.MergeFrom(pb.DeepCopy())
			pb.Spec.DeletionProtection = false
			Expect(cluster.Client.Patch(ctx, pb, patch)).To(Succeed())
			Eventually(gone(ctx, pb)).Should(Succeed())
			Eventually(gone(ctx, notes(pb))).Should(Succeed())
		})
	})
})
