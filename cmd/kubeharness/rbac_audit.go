package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeharness/kubeharness/harness/cli"
	"github.com/kubeharness/kubeharness/harness/controlplane"
	"github.com/kubeharness/kubeharness/harness/rbacaudit"
	"github.com/kubeharness/kubeharness/internal/deploy"
	"github.com/kubeharness/kubeharness/internal/repo"
)

// rbacAuditDirs are the kustomizations whose RBAC objects rbac-audit
// checks by default: the manager's, the VirtualMachine controller's, and
// the controller's optional CRD registration role, which the suite grants
// where it runs the controller with --register-crd.
var rbacAuditDirs = []string{"config/rbac", "config/vm/rbac", "config/vm/register-crd"}

// newRBACAuditCommand is `kubeharness rbac-audit`.
func newRBACAuditCommand() *cobra.Command {
	var dirs []string
	cmd := &cobra.Command{
		Use:   "rbac-audit [--rbac DIR]... AUDIT_LOG...",
		Short: "prove least privilege: match the requests of an API server audit log to the RBAC rules of config/",
		Long: `Reads API server audit logs (JSON, one event a line; a directory stands for
the *.log files in it) and the RBAC objects the --rbac kustomizations
render, and matches every request of a ServiceAccount they bind to the
rules that allowed it, as the RBAC authorizer does: API group, resource and
subresource, verb, resource names, the binding's namespace, non-resource
URLs. Requests made by impersonating the ServiceAccount count as its own.

Prints a table of every rule with the number of requests it allowed, by
verb, and a few of them; then the requests allowed by no rule of the
manifests (the API server's default roles: discovery); then the failures,
with what to do about each:
  unused      a rule grants a verb, resource, API group or name no request used
  forbidden   a request of a ServiceAccount was answered 403
  wildcard    a rule holds a "*"
  unbound     no binding grants a role; missing-role: a binding grants a
              role the manifests do not hold

The approve and sign permissions on certificates.k8s.io signers have no
request of their own: a successful update of a CSR's approval proves
approve, one of its status that writes the certificate proves sign, on the
signer the request body names.

The logs come from a test run with $` + controlplane.AuditDirEnv + ` set to a directory:
every control plane the run starts records there ('make rbac-audit' does
both).

Exit status: 0 when nothing failed, 1 on failures, 2 on a usage error.`,
		Example: `  KUBEHARNESS_AUDIT_DIR=$PWD/artifacts/audit make e2e
  kubeharness rbac-audit artifacts/audit`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cli.UsageErrorf("name the audit logs to read (files, or directories of *.log files)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(dirs) == 0 {
				return cli.UsageErrorf("--rbac: name at least one kustomization directory")
			}
			return runRBACAudit(cmd.OutOrStdout(), dirs, args)
		},
	}
	cmd.Flags().StringSliceVar(&dirs, "rbac", rbacAuditDirs, "kustomization directory whose RBAC objects are audited, relative to the repository root (repeatable)")
	return cmd
}

// runRBACAudit audits the logs against the RBAC objects of dirs and
// writes the report to out; failures make it an error.
func runRBACAudit(out io.Writer, dirs, logs []string) error {
	var root string
	cfg := &rbacaudit.Config{}
	for _, dir := range dirs {
		base := ""
		if !filepath.IsAbs(dir) {
			if root == "" {
				r, err := repo.Root()
				if err != nil {
					return err
				}
				root = r
			}
			base = root
		}
		objs, err := deploy.Render(base, dir)
		if err != nil {
			return err
		}
		rt := make([]runtime.Object, len(objs))
		for i, o := range objs {
			rt[i] = o
		}
		if err := cfg.Add(dir, rt...); err != nil {
			return err
		}
	}
	files, err := rbacaudit.LogFiles(logs...)
	var noLogs *rbacaudit.NoLogsError
	if errors.As(err, &noLogs) {
		return fmt.Errorf("%w: run the suite with %s=%s", err, controlplane.AuditDirEnv, noLogs.Dir)
	}
	if err != nil {
		return err
	}
	var reqs []rbacaudit.Request
	for _, f := range files {
		r, err := rbacaudit.ReadLog(f)
		if err != nil {
			return err
		}
		reqs = append(reqs, r...)
	}
	fmt.Fprintf(out, "RBAC of %s against %d audit logs\n", strings.Join(dirs, ", "), len(files))
	rep := rbacaudit.Analyze(cfg, reqs)
	if err := rbacaudit.Render(out, rep); err != nil {
		return err
	}
	if !rep.OK() {
		return fmt.Errorf("%d failures (listed above)", len(rep.Failures))
	}
	return nil
}
