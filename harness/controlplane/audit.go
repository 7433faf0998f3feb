package controlplane

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// AuditDirEnv names a directory: when set, every control plane
// started without Options.AuditDir records requests there, one log file per
// control plane. An environment variable, not only an option, because it
// must reach every control plane of a test run: the suite's, those specs
// start of their own, and those `kubeharness env up` starts in processes
// the suite runs.
const AuditDirEnv = "KUBEHARNESS_AUDIT_DIR"

// AuditPolicy is the audit policy of an audited control plane. Its rules
// match the user that authenticated, before impersonation (the API server
// evaluates the policy in its audit filter, which runs ahead of the
// impersonation filter), so the harness's admin, which acts as the
// manager's and the VirtualMachine controller's ServiceAccounts, is
// recorded in full; whom it acted as is the event's impersonatedUser.
// ServiceAccounts authenticating with their own tokens (a deployed
// manager) are recorded too. Requests of the API server itself are not.
//
// One event per request, when it completes or a watch starts: Metadata
// carries the verb, the object reference, the response code and the
// authorizer's decision. Some requests carry their bodies too, because an
// admission plugin authorizes the requester again for what the body says,
// a check with no audit event of its own: CSR approval and status updates
// (their signerName: approve, sign) and creates (their owner references:
// OwnerReferencesPermissionEnforcement's update on the owner's
// finalizers). Secrets and TokenReviews never do: they hold credentials.
const AuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    userGroups: [system:masters, system:serviceaccounts]
    resources:
      - group: ""
        resources: [secrets]
      - group: authentication.k8s.io
        resources: [tokenreviews]
  - level: Request
    userGroups: [system:masters, system:serviceaccounts]
    resources:
      - group: certificates.k8s.io
        resources: [certificatesigningrequests/approval, certificatesigningrequests/status]
  - level: Request
    userGroups: [system:masters, system:serviceaccounts]
    verbs: [create]
  - level: Metadata
    userGroups: [system:masters, system:serviceaccounts]
  - level: None
`

// auditFlags are kube-apiserver's audit flags for a control plane whose
// files live in dir: none unless o.AuditDir or $KUBEHARNESS_AUDIT_DIR names
// a directory. The log is JSON, one event a line, written before each
// response (blocking mode), so no event is dropped; it is never rotated. A
// policy that cannot be written is reported on out, and kube-apiserver
// then refuses to start for want of it.
func auditFlags(o Options, dir string, out io.Writer) []string {
	logDir := o.AuditDir
	if logDir == "" {
		logDir = os.Getenv(AuditDirEnv)
	}
	if logDir == "" {
		return nil
	}
	if abs, err := filepath.Abs(logDir); err == nil {
		logDir = abs
	}
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(AuditPolicy), 0o600); err != nil {
		fmt.Fprintf(out, "writing the audit policy: %v\n", err)
	}
	// The control plane's own directory name is unique among those that
	// run; kube-apiserver creates the log directory when missing.
	return []string{
		"--audit-policy-file=" + policy,
		"--audit-log-path=" + filepath.Join(logDir, filepath.Base(dir)+".audit.log"),
		"--audit-log-format=json",
		"--audit-log-mode=blocking",
		// In megabytes; past it the log would be rotated, which readers
		// would then have to follow.
		"--audit-log-maxsize=100000",
	}
}
