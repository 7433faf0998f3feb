// Package certs gives the webhook server its serving certificate through
// the CertificateSigningRequest API: a CA kept in a Secret, a CSR the manager
// creates, approves and signs itself (signer kubeharness.dev/webhook-serving),
// the issued chain served from memory with hot reload, the CA injected into
// every webhook configuration and CRD conversion webhook that asks for it,
// and renewal and CA rotation without a failed admission.
package certs
