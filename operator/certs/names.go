package certs

import "time"

const (
	// SignerName is the CSR signer kubeharness approves and signs for.
	SignerName = "kubeharness.dev/webhook-serving"
	// DefaultNamespace is the manager's namespace, on envtest too.
	DefaultNamespace = "kubeharness-system"
	// DefaultServiceName is the webhook Service.
	DefaultServiceName = "kubeharness-webhook-service"
	// CASecretName holds the CA: tls.crt and tls.key sign, ca.crt is the
	// bundle published in caBundle (old and new CA during a rotation).
	CASecretName = "kubeharness-ca"
	// ServingSecretName holds the issued serving chain and its key.
	ServingSecretName = "kubeharness-webhook-tls"

	// The objects kubeharness ships (config/webhook, config/crd) whose
	// caBundle it injects. Readiness and CA rotation wait for these only;
	// any other annotated object is injected best-effort and never blocks.
	// The injector's RBAC markers grant patch on exactly these names.
	MutatingWebhookConfigurationName   = "kubeharness-mutating-webhook-configuration"
	ValidatingWebhookConfigurationName = "kubeharness-validating-webhook-configuration"
	PlaybookCRDName                    = "playbooks.ops.kubeharness.dev"

	// DefaultCSRName and DefaultFallbackCSRName are Options.CSRNames() for
	// the default namespace and Service. The issuer's RBAC marker grants
	// delete on these two CertificateSigningRequests only.
	DefaultCSRName         = "kubeharness-webhook-serving-a6a5af79b3"
	DefaultFallbackCSRName = DefaultCSRName + fallbackCSRSuffix

	// InjectCAAnnotation marks webhook configurations and CRDs whose caBundle
	// kubeharness keeps in step with its CA.
	InjectCAAnnotation = "kubeharness.dev/inject-ca"
	// RotateAnnotation on the CA Secret forces a CA and certificate rotation
	// whenever its value changes.
	RotateAnnotation = "kubeharness.dev/rotate-requested-at"
	// rotatedAnnotation records the RotateAnnotation value last acted on.
	rotatedAnnotation = "kubeharness.dev/rotated-for"
	// rotationPhaseAnnotation records where a CA rotation stands.
	rotationPhaseAnnotation = "kubeharness.dev/rotation-phase"

	// FieldManager owns the caBundle fields kubeharness applies.
	FieldManager = "kubeharness-cainjector"

	// Secret keys.
	keyCABundle = "ca.crt"
	keyCert     = "tls.crt"
	keyKey      = "tls.key"

	// DefaultCertDuration is the lifetime of serving certificates: asked
	// for in expirationSeconds, and the most the signer issues.
	DefaultCertDuration = 24 * time.Hour
	// DefaultRotationSettle is how long a CA rotation keeps the old CA
	// published after the serving certificate switched.
	DefaultRotationSettle = 30 * time.Second
	// DefaultForbiddenRetry is how often a forbidden approval or injection
	// is tried again.
	DefaultForbiddenRetry = 2 * time.Second
	// DefaultCADuration is the lifetime of a new CA.
	DefaultCADuration = 365 * 24 * time.Hour
	// MinCertDuration and MaxCertDuration bound expirationSeconds the
	// signer honours, as the API's own signers do; the signer never issues
	// more than Options.CertDuration either.
	MinCertDuration = 10 * time.Minute
	MaxCertDuration = 365 * 24 * time.Hour
)
