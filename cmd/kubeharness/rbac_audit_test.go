package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRBACAudit runs rbac-audit on config/ and a log with one request of
// the manager: the table names the rule it used, the rules nothing used
// fail, and the exit status is 1.
func TestRBACAudit(t *testing.T) {
	dir := t.TempDir()
	event := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a1","stage":"ResponseComplete",` +
		`"verb":"create","requestURI":"/apis/authorization.k8s.io/v1/subjectaccessreviews",` +
		`"user":{"username":"kubeharness-admin","groups":["system:masters"]},` +
		`"impersonatedUser":{"username":"system:serviceaccount:kubeharness-system:kubeharness-manager","groups":["system:authenticated"]},` +
		`"objectRef":{"resource":"subjectaccessreviews","apiGroup":"authorization.k8s.io","apiVersion":"v1"},` +
		`"responseStatus":{"metadata":{},"code":201},"annotations":{"authorization.k8s.io/decision":"allow"}}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "kube-apiserver.audit.log"), []byte(event), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := kubeharness(t, "rbac-audit", dir)
	if code != 1 || !strings.Contains(errOut, "failures (listed above)") {
		t.Fatalf("exit status %d, stderr %q; want 1 and the failures counted", code, errOut)
	}
	for _, want := range []string{
		"1 by system:serviceaccount:kubeharness-system:kubeharness-manager",
		"RULE", "authorization.k8s.io subjectaccessreviews", "create=1",
		"create /apis/authorization.k8s.io/v1/subjectaccessreviews",
		"[unused]", "fix: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestRBACAuditWithoutLogs(t *testing.T) {
	empty := t.TempDir()
	_, errOut, code := kubeharness(t, "rbac-audit", empty)
	if code != 1 || !strings.Contains(errOut, "KUBEHARNESS_AUDIT_DIR") {
		t.Errorf("an empty directory: exit status %d, stderr %q; want 1 and how to record a log", code, errOut)
	}
	_, errOut, code = kubeharness(t, "rbac-audit", filepath.Join(empty, "missing.log"))
	if code != 1 || !strings.Contains(errOut, "missing.log") {
		t.Errorf("a missing file: exit status %d, stderr %q; want 1 naming it", code, errOut)
	}
}
