package certs

import (
	"context"
	"errors"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Signer issues certificates for approved requests to
// kubeharness.dev/webhook-serving with the CA from the CA Secret. It does not
// trust approval: whoever approved a request, it signs only what its Policy
// allows (the manager's own requests) and builds the certificate from the
// Policy, not from the request. Requests it will not or cannot sign are
// marked Failed with the reason; other signers' requests are never looked at.
type Signer struct {
	client.Client
	Namespace string
	Policy    Policy
	Now       func() time.Time
}

// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests/status,verbs=update
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=signers,resourceNames=kubeharness.dev/webhook-serving,verbs=sign

// Reconcile signs one approved request.
func (s *Signer) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	csr := &certificatesv1.CertificateSigningRequest{}
	if err := s.Get(ctx, req.NamespacedName, csr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if csr.Spec.SignerName != SignerName || !hasCondition(csr, certificatesv1.CertificateApproved) ||
		hasCondition(csr, certificatesv1.CertificateDenied) || hasCondition(csr, certificatesv1.CertificateFailed) ||
		len(csr.Status.Certificate) > 0 {
		return ctrl.Result{}, nil
	}
	leaf, d, err := s.Policy.CheckSignable(csr.Spec)
	if err != nil {
		reason := ReasonPolicyViolation
		var v *Violation
		if errors.As(err, &v) {
			reason = v.Reason
		}
		return ctrl.Result{}, s.fail(ctx, csr, reason, fmt.Sprintf("%s does not sign this request, whoever approved it: %v", SignerName, err))
	}
	caSecret := &corev1.Secret{}
	key := types.NamespacedName{Namespace: s.Namespace, Name: CASecretName}
	if err := s.Get(ctx, key, caSecret); err != nil {
		return ctrl.Result{}, fmt.Errorf("getting CA Secret %s to sign %s: %w", key, csr.Name, err)
	}
	now := s.Now()
	ca, err := ParseCA(caSecret.Data[keyCert], caSecret.Data[keyKey], now)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("CA Secret %s is unusable, cannot sign %s: %w", key, csr.Name, err)
	}
	cert, err := ca.Sign(leaf, d, now)
	if err != nil {
		return ctrl.Result{}, s.fail(ctx, csr, "SigningError", err.Error())
	}
	signed := csr.DeepCopy()
	signed.Status.Certificate = cert
	if err := s.Status().Update(ctx, signed); err != nil {
		return ctrl.Result{}, fmt.Errorf("storing the certificate in CertificateSigningRequest %s: %w", csr.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("signed certificate request", "csr", csr.Name, "validFor", d, "ca", ca.Cert.Subject.CommonName)
	return ctrl.Result{}, nil
}

func (s *Signer) fail(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, reason, message string) error {
	failed := csr.DeepCopy()
	failed.Status.Conditions = append(failed.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue,
		Reason: reason, Message: message, LastUpdateTime: metav1.Now(),
	})
	if err := s.Status().Update(ctx, failed); err != nil {
		return fmt.Errorf("marking CertificateSigningRequest %s failed: %w", csr.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("certificate request failed", "csr", csr.Name, "requester", csr.Spec.Username,
		"reason", reason, "message", message)
	return nil
}

// SetupWithManager registers the signer.
func (s *Signer) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("csr-signer").
		For(&certificatesv1.CertificateSigningRequest{}, builder.WithPredicates(ourSigner())).
		Complete(s)
}
