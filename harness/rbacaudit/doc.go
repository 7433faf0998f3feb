// Package rbacaudit proves least privilege from an API server audit log:
// it matches every request of the ServiceAccounts that RBAC manifests bind
// to the rule that allowed it, the way the RBAC authorizer does (API group,
// resource and subresource, verb, resource names, the binding's namespace,
// non-resource URLs), and reports the rules, or parts of rules, that no
// request used, the requests that were forbidden, and the rules that use
// wildcards.
//
// Two permissions are checked by the API server without a request of
// their own: approve and sign on certificates.k8s.io signers, which the
// CertificateApproval and CertificateSigning admission plugins check when
// a CertificateSigningRequest's approval or status is updated. A
// successful update of certificatesigningrequests/approval proves approve
// on its signer, one of certificatesigningrequests/status that writes a
// certificate (or a Failed condition) proves sign; the signer's name comes
// from the request body, which the audit policy records for those two
// subresources.
//
// Everything but the reading of files is a pure function of its inputs:
// the audit events (ReadEvents; LogFiles and ReadLog read them from the
// logs an API server wrote) and the RBAC objects (Config).
package rbacaudit
