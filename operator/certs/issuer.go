package certs

import (
	"context"
	"crypto/tls"
	"fmt"
	"slices"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Event reasons the issuer records on the CA Secret.
const (
	// ReasonCACreated: no CA Secret existed, so a new CA was made.
	ReasonCACreated = "CACreated"
	// ReasonCAUnusable: the CA Secret exists but cannot be used.
	ReasonCAUnusable = "CAUnusable"
	// ReasonCSRCreated: a CertificateSigningRequest was submitted.
	ReasonCSRCreated = "CSRCreated"
	// ReasonCSRDenied: someone denied the request; it is retried with backoff.
	ReasonCSRDenied = "CSRDenied"
	// ReasonCSRFailed: the signer failed the request; retried with backoff.
	ReasonCSRFailed = "CSRFailed"
	// ReasonCSRNameTaken: a CertificateSigningRequest another user created
	// holds a name the manager requests under. The manager neither deletes
	// nor uses it, and requests under its fallback name.
	ReasonCSRNameTaken = "CSRNameTaken"
	// ReasonCSRDeleteForbidden: the manager may not delete its own request.
	ReasonCSRDeleteForbidden = "CSRDeleteForbidden"
	// ReasonCertificateIssued: a serving certificate was stored.
	ReasonCertificateIssued = "CertificateIssued"
	// ReasonRotationStarted: the new CA is published next to the old one.
	ReasonRotationStarted = "RotationStarted"
	// ReasonRotationSwitched: the new CA signs; the serving certificate follows.
	ReasonRotationSwitched = "RotationSwitched"
	// ReasonRotationFinished: the old CA is no longer published.
	ReasonRotationFinished = "RotationFinished"
)

// Rotation phases, recorded on the CA Secret.
const (
	phasePublishing       = "publishing" // bundle holds old+new; old CA still signs
	phaseSwitching        = "switching"  // new CA signs; serving certificate re-issued
	phaseSettling         = "settling"   // serving certificate switched; old CA kept a while
	settleSinceAnnotation = "kubeharness.dev/rotation-settle-since"
	keyNextCert           = "next.crt"
	keyNextKey            = "next.key"
)

// Issuer keeps the CA and the serving certificate: it makes the CA when
// missing, requests the serving certificate through the CSR API, stores what
// is issued, renews at two thirds of the lifetime and carries CA rotations
// through. It runs on the leader only.
type Issuer struct {
	client.Client
	Options Options
	// Policy builds the manager's requests; its Username tells the
	// manager's requests from others'.
	Policy   Policy
	Recorder events.EventRecorder
	// Injected reports whether the objects kubeharness ships publish bundle
	// (CAInjector.Injected); a CA rotation waits for it, and for nothing else.
	Injected func(ctx context.Context, bundle []byte) (bool, error)
	Now      func() time.Time

	mu      sync.Mutex
	pending *pendingRequest
	backoff time.Duration
	// retryAt is when a request that was denied or failed may be retried.
	retryAt time.Time
}

type pendingRequest struct {
	name   string
	uid    types.UID
	keyPEM []byte
}

// takenRetry is how often the issuer looks again when every name it may
// request under is held by another user's request. Deleting one brings it
// back at once through the watch.
const takenRetry = time.Minute

// The manager's Secret rights are in its namespace only, where no Secret
// but its own lives (the VirtualMachine controller's Docker credentials
// are in a namespace of their own). Writes name the Secret they may touch:
// the CA Secret is patched (rotation), the serving Secret updated
// (CreateOrUpdate). Create cannot be limited to a name (RBAC sees no name
// on a create), nor can the cache's unfiltered list and watch.
//
// +kubebuilder:rbac:groups="",namespace=kubeharness-system,resources=secrets,verbs=list;watch;create
// +kubebuilder:rbac:groups="",namespace=kubeharness-system,resources=secrets,resourceNames=kubeharness-ca,verbs=patch
// +kubebuilder:rbac:groups="",namespace=kubeharness-system,resources=secrets,resourceNames=kubeharness-webhook-tls,verbs=update
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests,verbs=list;watch;create
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests,resourceNames=kubeharness-webhook-serving-a6a5af79b3;kubeharness-webhook-serving-a6a5af79b3-fallback,verbs=delete

// Reconcile brings the CA and the serving certificate to their desired state.
func (r *Issuer) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.Now()
	caSecret, ca, err := r.ensureCA(ctx, now)
	if err != nil || caSecret == nil {
		return ctrl.Result{}, err
	}
	if res, handled, err := r.rotate(ctx, caSecret, ca, now); handled || err != nil {
		return res, err
	}
	return r.ensureServing(ctx, caSecret, ca, now)
}

func (r *Issuer) caKey() types.NamespacedName {
	return types.NamespacedName{Namespace: r.Options.Namespace, Name: CASecretName}
}

// ensureCA returns the CA Secret and its CA, creating both when absent.
func (r *Issuer) ensureCA(ctx context.Context, now time.Time) (*corev1.Secret, *CA, error) {
	secret := &corev1.Secret{}
	err := r.Get(ctx, r.caKey(), secret)
	if apierrors.IsNotFound(err) {
		ca, err := NewCA(now, r.Options.CADuration)
		if err != nil {
			return nil, nil, err
		}
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: r.Options.Namespace, Name: CASecretName},
			Type:       corev1.SecretTypeTLS,
			Data:       map[string][]byte{keyCert: ca.CertPEM, keyKey: ca.KeyPEM, keyCABundle: ca.CertPEM},
		}
		if err := r.Create(ctx, secret); err != nil {
			return nil, nil, fmt.Errorf("creating CA Secret %s: %w", r.caKey(), err)
		}
		r.Recorder.Eventf(secret, nil, corev1.EventTypeNormal, ReasonCACreated, "Create",
			"created CA %q valid until %s", ca.Cert.Subject.CommonName, ca.Cert.NotAfter.Format(time.RFC3339))
		// The create event brings the Secret back through the cache.
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("getting CA Secret %s: %w", r.caKey(), err)
	}
	ca, err := ParseCA(secret.Data[keyCert], secret.Data[keyKey], now)
	if err != nil {
		err = fmt.Errorf("CA Secret %s exists but is unusable: %w; fix it, or delete it and a new CA is made", r.caKey(), err)
		r.Recorder.Eventf(secret, nil, corev1.EventTypeWarning, ReasonCAUnusable, "Load", "%v", err)
		// Retrying cannot help; an update of the Secret brings it back.
		return nil, nil, reconcile.TerminalError(err)
	}
	return secret, ca, nil
}

// bundle is what caBundle publishes.
func bundle(caSecret *corev1.Secret) []byte {
	if b := caSecret.Data[keyCABundle]; len(b) > 0 {
		return b
	}
	return caSecret.Data[keyCert]
}

// rotate carries a requested CA rotation one step. It reports handled when
// this reconcile should do nothing else.
func (r *Issuer) rotate(ctx context.Context, caSecret *corev1.Secret, ca *CA, now time.Time) (ctrl.Result, bool, error) {
	want := caSecret.Annotations[RotateAnnotation]
	if want == "" || want == caSecret.Annotations[rotatedAnnotation] {
		return ctrl.Result{}, false, nil
	}
	log := ctrl.LoggerFrom(ctx).WithValues("rotation", want)
	patch := client.MergeFrom(caSecret.DeepCopy())
	switch phase := caSecret.Annotations[rotationPhaseAnnotation]; phase {
	case "":
		next, err := NewCA(now, r.Options.CADuration)
		if err != nil {
			return ctrl.Result{}, true, err
		}
		caSecret.Data[keyNextCert], caSecret.Data[keyNextKey] = next.CertPEM, next.KeyPEM
		caSecret.Data[keyCABundle] = MergeBundles(bundle(caSecret), next.CertPEM)
		caSecret.Annotations[rotationPhaseAnnotation] = phasePublishing
		if err := r.Patch(ctx, caSecret, patch); err != nil {
			return ctrl.Result{}, true, fmt.Errorf("publishing the new CA: %w", err)
		}
		log.Info("CA rotation: new CA published next to the old one")
		r.Recorder.Eventf(caSecret, nil, corev1.EventTypeNormal, ReasonRotationStarted, "Rotate",
			"publishing new CA %q next to %q", next.Cert.Subject.CommonName, ca.Cert.Subject.CommonName)
		return ctrl.Result{}, true, nil

	case phasePublishing:
		ok, err := r.Injected(ctx, bundle(caSecret))
		if err != nil {
			return ctrl.Result{RequeueAfter: time.Second}, true, err
		}
		if !ok {
			// Until the new bundle is published everywhere the old CA still
			// signs: keep the serving certificate renewed meanwhile, however
			// long the wait, and look again soon (the injector's writes do
			// not come back here).
			res, err := r.ensureServing(ctx, caSecret, ca, now)
			if res.RequeueAfter == 0 || res.RequeueAfter > time.Second {
				res.RequeueAfter = time.Second
			}
			return res, true, err
		}
		next, err := ParseCA(caSecret.Data[keyNextCert], caSecret.Data[keyNextKey], now)
		if err != nil {
			return ctrl.Result{}, true, reconcile.TerminalError(fmt.Errorf("CA Secret %s: the rotation's next CA is unusable: %w", r.caKey(), err))
		}
		caSecret.Data[keyCert], caSecret.Data[keyKey] = next.CertPEM, next.KeyPEM
		delete(caSecret.Data, keyNextCert)
		delete(caSecret.Data, keyNextKey)
		caSecret.Annotations[rotationPhaseAnnotation] = phaseSwitching
		if err := r.Patch(ctx, caSecret, patch); err != nil {
			return ctrl.Result{}, true, fmt.Errorf("switching to the new CA: %w", err)
		}
		log.Info("CA rotation: new CA published everywhere; it signs from now on")
		r.Recorder.Eventf(caSecret, nil, corev1.EventTypeNormal, ReasonRotationSwitched, "Rotate",
			"every injected caBundle trusts %q; re-issuing the serving certificate", next.Cert.Subject.CommonName)
		return ctrl.Result{}, true, nil

	case phaseSwitching:
		if !r.servingValid(ctx, ca, now) {
			return ctrl.Result{}, false, nil // ensureServing re-issues
		}
		caSecret.Annotations[rotationPhaseAnnotation] = phaseSettling
		caSecret.Annotations[settleSinceAnnotation] = now.UTC().Format(time.RFC3339Nano)
		if err := r.Patch(ctx, caSecret, patch); err != nil {
			return ctrl.Result{}, true, err
		}
		return ctrl.Result{RequeueAfter: r.Options.RotationSettle}, true, nil

	case phaseSettling:
		since, err := time.Parse(time.RFC3339Nano, caSecret.Annotations[settleSinceAnnotation])
		if err != nil || since.After(now) {
			// A missing, malformed or future start would end settling at
			// once or never: the old CA could stop being trusted before
			// every replica reloaded. Settle the whole period from now.
			log.Info("CA rotation: settling start unreadable; settling again from now", "annotation", settleSinceAnnotation,
				"value", caSecret.Annotations[settleSinceAnnotation])
			caSecret.Annotations[settleSinceAnnotation] = now.UTC().Format(time.RFC3339Nano)
			if err := r.Patch(ctx, caSecret, patch); err != nil {
				return ctrl.Result{}, true, err
			}
			return ctrl.Result{RequeueAfter: r.Options.RotationSettle}, true, nil
		}
		if now.Before(since.Add(r.Options.RotationSettle)) {
			return ctrl.Result{RequeueAfter: since.Add(r.Options.RotationSettle).Sub(now)}, true, nil
		}
		caSecret.Data[keyCABundle] = ca.CertPEM
		delete(caSecret.Annotations, rotationPhaseAnnotation)
		delete(caSecret.Annotations, settleSinceAnnotation)
		caSecret.Annotations[rotatedAnnotation] = want
		if err := r.Patch(ctx, caSecret, patch); err != nil {
			return ctrl.Result{}, true, err
		}
		log.Info("CA rotation finished: the old CA is no longer published")
		r.Recorder.Eventf(caSecret, nil, corev1.EventTypeNormal, ReasonRotationFinished, "Rotate",
			"only %q is published now", ca.Cert.Subject.CommonName)
		return ctrl.Result{}, true, nil

	default:
		return ctrl.Result{}, true, reconcile.TerminalError(fmt.Errorf("CA Secret %s: unknown rotation phase %q in annotation %s", r.caKey(), phase, rotationPhaseAnnotation))
	}
}

func (r *Issuer) servingKey() types.NamespacedName {
	return types.NamespacedName{Namespace: r.Options.Namespace, Name: ServingSecretName}
}

// servingValid reports whether the stored serving certificate is signed by
// ca, names every expected host, matches its key and is not due for renewal.
func (r *Issuer) servingValid(ctx context.Context, ca *CA, now time.Time) bool {
	_, ok := r.servingRenewAt(ctx, ca, now)
	return ok
}

func (r *Issuer) servingRenewAt(ctx context.Context, ca *CA, now time.Time) (time.Time, bool) {
	secret := &corev1.Secret{}
	if err := r.Get(ctx, r.servingKey(), secret); err != nil {
		return time.Time{}, false
	}
	pair, err := tls.X509KeyPair(secret.Data[keyCert], secret.Data[keyKey])
	if err != nil {
		return time.Time{}, false
	}
	for _, host := range r.Options.Hosts() {
		if VerifyServing(secret.Data[keyCert], ca.CertPEM, host, now) != nil {
			return time.Time{}, false
		}
	}
	renew := RenewAt(pair.Leaf)
	return renew, now.Before(renew)
}

// ensureServing keeps a valid serving certificate in the serving Secret,
// requesting a new one through the CSR API when needed.
func (r *Issuer) ensureServing(ctx context.Context, caSecret *corev1.Secret, ca *CA, now time.Time) (ctrl.Result, error) {
	if renew, ok := r.servingRenewAt(ctx, ca, now); ok {
		return ctrl.Result{RequeueAfter: renew.Sub(now)}, nil
	}
	log := ctrl.LoggerFrom(ctx)
	if r.pending != nil {
		csr := &certificatesv1.CertificateSigningRequest{}
		err := r.Get(ctx, types.NamespacedName{Name: r.pending.name}, csr)
		switch {
		case err == nil && csr.UID == r.pending.uid:
			return r.follow(ctx, caSecret, csr, now)
		case err != nil && !apierrors.IsNotFound(err):
			return ctrl.Result{}, fmt.Errorf("getting CertificateSigningRequest %s: %w", r.pending.name, err)
		}
		// Deleted, or replaced by another request of that name: ask again.
		r.pending = nil
	}
	if now.Before(r.retryAt) {
		return ctrl.Result{RequeueAfter: r.retryAt.Sub(now)}, nil
	}
	names := r.Options.CSRNames()
	for i, name := range names {
		csr := &certificatesv1.CertificateSigningRequest{}
		err := r.Get(ctx, types.NamespacedName{Name: name}, csr)
		switch {
		case apierrors.IsNotFound(err):
			return r.submit(ctx, caSecret, name)
		case err != nil:
			return ctrl.Result{}, fmt.Errorf("getting CertificateSigningRequest %s: %w", name, err)
		case csr.Spec.Username == r.Policy.Username:
			// The manager's own: issued before (renewal), or submitted by a
			// run whose key is gone. Its deletion brings us back here.
			log.Info("replacing CertificateSigningRequest whose key this manager does not hold", "csr", name)
			return ctrl.Result{}, r.deleteCSR(ctx, caSecret, csr)
		}
		next := "no other name is left: no serving certificate can be requested until it is deleted"
		if i+1 < len(names) {
			next = "requesting under " + names[i+1] + " instead"
		}
		r.reportTaken(ctx, caSecret, csr, next)
	}
	return ctrl.Result{RequeueAfter: takenRetry}, nil
}

// reportTaken says that another user's request holds a name the manager
// requests under, and what to do about it. The manager leaves it alone: it
// may be someone's legitimate request, and deleting what others created is
// not the manager's to do.
func (r *Issuer) reportTaken(ctx context.Context, caSecret *corev1.Secret, csr *certificatesv1.CertificateSigningRequest, next string) {
	msg := fmt.Sprintf("CertificateSigningRequest %s, a name the manager requests its serving certificate under, was created by %q, "+
		"not by the manager (%q); the manager neither deletes, approves nor uses it, and %s. "+
		"Fix: delete it (kubectl delete certificatesigningrequest %s) unless it is needed, and find out why %q created it",
		csr.Name, csr.Spec.Username, r.Policy.Username, next, csr.Name, csr.Spec.Username)
	r.Recorder.Eventf(caSecret, csr, corev1.EventTypeWarning, ReasonCSRNameTaken, "Request", "%s", msg)
	r.Recorder.Eventf(csr, caSecret, corev1.EventTypeWarning, ReasonCSRNameTaken, "Request", "%s", msg)
	ctrl.LoggerFrom(ctx).Info("certificate request name taken by another user", "csr", csr.Name, "requester", csr.Spec.Username,
		"manager", r.Policy.Username, "next", next, "fix", "kubectl delete certificatesigningrequest "+csr.Name)
}

// follow carries the manager's pending request on: stores what is issued,
// and asks again (with backoff) when it was denied or failed.
func (r *Issuer) follow(ctx context.Context, caSecret *corev1.Secret, csr *certificatesv1.CertificateSigningRequest, now time.Time) (ctrl.Result, error) {
	for _, c := range csr.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			reason := ReasonCSRDenied
			if c.Type == certificatesv1.CertificateFailed {
				reason = ReasonCSRFailed
			}
			r.backoff = min(max(2*r.backoff, time.Second), 5*time.Minute)
			r.retryAt = now.Add(r.backoff)
			r.Recorder.Eventf(caSecret, nil, corev1.EventTypeWarning, reason, "Request",
				"CertificateSigningRequest %s %s (%s: %s); retrying in %s", csr.Name, c.Type, c.Reason, c.Message, r.backoff)
			ctrl.LoggerFrom(ctx).Info("certificate request not issued; retrying", "csr", csr.Name, "condition", c.Type,
				"reason", c.Reason, "message", c.Message, "retryIn", r.backoff)
			r.pending = nil
			if err := r.deleteCSR(ctx, caSecret, csr); err != nil {
				return ctrl.Result{}, err
			}
			return ctrl.Result{RequeueAfter: r.backoff}, nil
		}
	}
	if len(csr.Status.Certificate) == 0 {
		// Approval and signing come back here through the CSR watch.
		return ctrl.Result{}, nil
	}
	return r.store(ctx, caSecret, csr)
}

func (r *Issuer) submit(ctx context.Context, caSecret *corev1.Secret, name string) (ctrl.Result, error) {
	key, keyPEM, err := NewKey()
	if err != nil {
		return ctrl.Result{}, err
	}
	request, err := r.Policy.NewRequest(key)
	if err != nil {
		return ctrl.Result{}, err
	}
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/managed-by": "kubeharness"}},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: request, SignerName: SignerName, Usages: ServingUsages,
			ExpirationSeconds: ptr.To(int32(r.Policy.Lifetime(nil) / time.Second)),
		},
	}
	if err := r.Create(ctx, csr); err != nil {
		if apierrors.IsAlreadyExists(err) {
			// Created since the cache last saw it; its event brings it back.
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		return ctrl.Result{}, fmt.Errorf("creating CertificateSigningRequest %s: %w", name, err)
	}
	r.pending = &pendingRequest{name: name, uid: csr.UID, keyPEM: keyPEM}
	r.Recorder.Eventf(caSecret, nil, corev1.EventTypeNormal, ReasonCSRCreated, "Request",
		"created CertificateSigningRequest %s for %v", name, r.Options.Hosts())
	return ctrl.Result{}, nil
}

func (r *Issuer) store(ctx context.Context, caSecret *corev1.Secret, csr *certificatesv1.CertificateSigningRequest) (ctrl.Result, error) {
	if _, err := tls.X509KeyPair(csr.Status.Certificate, r.pending.keyPEM); err != nil {
		r.pending = nil
		return ctrl.Result{}, r.deleteCSR(ctx, caSecret, csr)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: r.Options.Namespace, Name: ServingSecretName}}
	if _, err := ctrl.CreateOrUpdate(ctx, r.Client, secret, func() error {
		secret.Type = corev1.SecretTypeTLS
		secret.Data = map[string][]byte{keyCert: csr.Status.Certificate, keyKey: r.pending.keyPEM, keyCABundle: bundle(caSecret)}
		return nil
	}); err != nil {
		return ctrl.Result{}, fmt.Errorf("storing the serving certificate in Secret %s: %w", r.servingKey(), err)
	}
	r.pending, r.backoff, r.retryAt = nil, 0, time.Time{}
	r.Recorder.Eventf(caSecret, nil, corev1.EventTypeNormal, ReasonCertificateIssued, "Store",
		"stored the certificate issued for CertificateSigningRequest %s in Secret %s", csr.Name, r.servingKey())
	return ctrl.Result{}, nil
}

// deleteCSR deletes one of the manager's own requests (the caller checked
// that it is), by UID so that a request of that name created since is kept.
func (r *Issuer) deleteCSR(ctx context.Context, caSecret *corev1.Secret, csr *certificatesv1.CertificateSigningRequest) error {
	err := r.Delete(ctx, csr, client.Preconditions{UID: &csr.UID})
	if apierrors.IsForbidden(err) {
		msg := fmt.Sprintf("the manager (%s) may not delete its CertificateSigningRequest %s: its ClusterRole needs verb delete on "+
			"certificates.k8s.io certificatesigningrequests with resourceNames %v (config/rbac grants it for the default "+
			"namespace and Service only): %v", r.Policy.Username, csr.Name, r.Options.CSRNames(), err)
		r.Recorder.Eventf(caSecret, csr, corev1.EventTypeWarning, ReasonCSRDeleteForbidden, "Delete", "%s", msg)
		return fmt.Errorf("%s", msg)
	}
	if client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting CertificateSigningRequest %s: %w", csr.Name, err)
	}
	return nil
}

// SetupWithManager registers the issuer: every change to the CA Secret, the
// serving Secret or the manager's CSR reconciles the one CA key.
func (r *Issuer) SetupWithManager(mgr ctrl.Manager) error {
	toCA := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: r.caKey()}}
	})
	csrNames := r.Options.CSRNames()
	// One event at start: with no Secret yet, nothing else would make the CA.
	kick := make(chan event.GenericEvent, 1)
	kick <- event.GenericEvent{Object: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: r.Options.Namespace, Name: CASecretName}}}
	return ctrl.NewControllerManagedBy(mgr).
		Named("certificate-issuer").
		For(&corev1.Secret{}, builder.WithPredicates(namePredicate(r.Options.Namespace, CASecretName))).
		Watches(&corev1.Secret{}, toCA, builder.WithPredicates(namePredicate(r.Options.Namespace, ServingSecretName))).
		Watches(&certificatesv1.CertificateSigningRequest{}, toCA, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return slices.Contains(csrNames, o.GetName())
		}))).
		WatchesRawSource(source.Channel(kick, toCA)).
		WithOptions(controllerOptions(nil)).
		Complete(r)
}
