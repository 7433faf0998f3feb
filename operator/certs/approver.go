package certs

import (
	"context"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Approver approves the manager's own serving certificate requests, those
// its Policy allows: signer kubeharness.dev/webhook-serving, requested by the
// manager's identity, naming only the webhook Service (and the configured
// extra hosts), for serving usages. Every other request is left alone for
// others to decide; the Signer applies the same Policy whoever approves.
type Approver struct {
	client.Client
	Policy   Policy
	Recorder events.EventRecorder
	// ForbiddenRetry is how often a forbidden approval is tried again;
	// zero means DefaultForbiddenRetry.
	ForbiddenRetry time.Duration
}

// ReasonApprovalForbidden: the manager may not approve for its signer.
const ReasonApprovalForbidden = "ApprovalForbidden"

// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests/approval,verbs=update
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=signers,resourceNames=kubeharness.dev/webhook-serving,verbs=approve

// Reconcile approves one request when the policy allows it.
func (a *Approver) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	csr := &certificatesv1.CertificateSigningRequest{}
	if err := a.Get(ctx, req.NamespacedName, csr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if decided(csr) {
		return ctrl.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx).WithValues("csr", csr.Name, "requester", csr.Spec.Username)
	if err := a.Policy.CheckApproval(csr.Spec); err != nil {
		log.V(2).Info("leaving certificate request alone", "why", err.Error())
		return ctrl.Result{}, nil
	}
	approved := csr.DeepCopy()
	approved.Status.Conditions = append(approved.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue,
		Reason: "KubeharnessAutoApproved", Message: "the kubeharness manager's own webhook serving certificate",
		LastUpdateTime: metav1.Now(),
	})
	if err := a.SubResource("approval").Update(ctx, approved); err != nil {
		if apierrors.IsForbidden(err) {
			msg := fmt.Sprintf("the manager (%s) may not approve requests for signer %s: its ClusterRole needs verb approve on "+
				"certificates.k8s.io signers with resourceNames [%s] (config/rbac); retrying every %s: %v",
				a.Policy.Username, SignerName, SignerName, a.forbiddenRetry(), err)
			a.Recorder.Eventf(csr, nil, corev1.EventTypeWarning, ReasonApprovalForbidden, "Approve", "%s", msg)
			log.Error(err, "approval forbidden", "fix", "grant approve on signers/"+SignerName)
			return ctrl.Result{RequeueAfter: a.forbiddenRetry()}, nil
		}
		return ctrl.Result{}, fmt.Errorf("approving CertificateSigningRequest %s: %w", csr.Name, err)
	}
	log.Info("approved certificate request")
	return ctrl.Result{}, nil
}

func decided(csr *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied {
			return true
		}
	}
	return false
}

func hasCondition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func ourSigner() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		csr, ok := o.(*certificatesv1.CertificateSigningRequest)
		return ok && csr.Spec.SignerName == SignerName
	})
}

// SetupWithManager registers the approver.
func (a *Approver) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("csr-approver").
		For(&certificatesv1.CertificateSigningRequest{}, builder.WithPredicates(ourSigner())).
		Complete(a)
}

func (a *Approver) forbiddenRetry() time.Duration { return forbiddenRetryOr(a.ForbiddenRetry) }

// forbiddenRetryOr is d, or DefaultForbiddenRetry when d is not positive.
func forbiddenRetryOr(d time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return DefaultForbiddenRetry
}
