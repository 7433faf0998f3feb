package certs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Ready is the manager's readiness for webhooks: a certificate is served,
// the published CA bundle and the caBundle of every webhook configuration
// and CRD kubeharness ships verify it, and the canary (Options.Canary) passes. Other annotated objects are injected best-effort and
// never make the manager unready. Verifying rather than comparing bundles
// keeps the manager ready through every step of a CA rotation.
type Ready struct {
	serving  *Serving
	injector *CAInjector
	o        Options

	mu        sync.Mutex
	checkedAt time.Time
	last      error
}

// canaryEvery bounds how often the readiness check sends its canary.
const canaryEvery = 5 * time.Second

// Check implements a controller-runtime healthz.Checker.
func (r *Ready) Check(req *http.Request) error {
	leaf := r.serving.Leaf()
	if leaf == nil {
		return errors.New("no serving certificate issued yet")
	}
	ctx := req.Context()
	b, err := r.injector.desired(ctx)
	if err != nil {
		return fmt.Errorf("reading the CA bundle: %w", err)
	}
	if b == nil {
		return fmt.Errorf("no CA bundle yet: Secret %s/%s does not exist", r.o.Namespace, CASecretName)
	}
	leafPEM, host, now := encodePEM("CERTIFICATE", leaf.Raw), r.o.DNSNames()[0], time.Now()
	if err := VerifyServing(leafPEM, b, host, now); err != nil {
		return fmt.Errorf("the published CA bundle does not verify the served certificate: %w", err)
	}
	if err := r.injector.Trusted(ctx, leafPEM, host, now); err != nil {
		return err
	}
	if r.o.Canary == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.checkedAt) > canaryEvery || r.last != nil {
		r.last, r.checkedAt = r.o.Canary(), time.Now()
	}
	if r.last != nil {
		return fmt.Errorf("canary request through the API server was not admitted: %w", r.last)
	}
	return nil
}

// Setup wires the certificate path into mgr: the serving-certificate loader
// on every replica; the issuer, approver, signer and caBundle injector on the
// leader. serving must be the one whose TLSOpts the webhook server uses.
func Setup(mgr ctrl.Manager, o Options, serving *Serving) (*Ready, error) {
	o = o.Defaulted()
	identity, err := Identity(context.Background(), mgr.GetConfig())
	if err != nil {
		return nil, err
	}
	ctrl.Log.WithName("certs").Info("certificate path set up", "identity", identity, "signer", SignerName,
		"csr", o.CSRName(), "hosts", o.DNSNames(), "ips", o.ExtraIPs)
	serving.Client, serving.Options = mgr.GetClient(), o
	if err := serving.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	policy := NewPolicy(o, identity)
	injector := &CAInjector{
		Client: mgr.GetClient(), Namespace: o.Namespace, Identity: identity,
		Recorder: mgr.GetEventRecorder("kubeharness-cainjector"), ForbiddenRetry: o.ForbiddenRetry,
	}
	if err := injector.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	issuer := &Issuer{
		Client: mgr.GetClient(), Options: o, Policy: policy, Recorder: mgr.GetEventRecorder("kubeharness-certificates"),
		Injected: injector.Injected, Now: time.Now,
	}
	if err := issuer.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	approver := &Approver{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("kubeharness-csr-approver"), Policy: policy, ForbiddenRetry: o.ForbiddenRetry}
	if err := approver.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	if err := (&Signer{Client: mgr.GetClient(), Namespace: o.Namespace, Policy: policy, Now: time.Now}).SetupWithManager(mgr); err != nil {
		return nil, err
	}
	return &Ready{serving: serving, injector: injector, o: o}, nil
}

// Identity asks the API server who the manager is (SelfSubjectReview): the
// username the approver and signer require as requester of the manager's
// own CSRs, and by which the issuer tells its requests from others'.
func Identity(ctx context.Context, cfg *rest.Config) (string, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("asking the API server who the manager is (SelfSubjectReview): %w", err)
	}
	return review.Status.UserInfo.Username, nil
}
