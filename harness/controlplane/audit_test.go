package controlplane

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestAuditFlags(t *testing.T) {
	t.Setenv(AuditDirEnv, "")
	dir := t.TempDir()
	if got := auditFlags(Options{}, dir, io.Discard); got != nil {
		t.Errorf("no audit directory: flags %q, want none", got)
	}

	logs := t.TempDir()
	t.Setenv(AuditDirEnv, logs)
	flags := strings.Join(auditFlags(Options{}, dir, io.Discard), " ")
	for _, want := range []string{
		"--audit-policy-file=" + filepath.Join(dir, "audit-policy.yaml"),
		"--audit-log-path=" + filepath.Join(logs, filepath.Base(dir)+".audit.log"),
		"--audit-log-format=json", "--audit-log-mode=blocking",
	} {
		if !strings.Contains(flags, want) {
			t.Errorf("flags %q lack %q", flags, want)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "audit-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var policy struct {
		Kind  string `json:"kind"`
		Rules []struct {
			Level string `json:"level"`
		} `json:"rules"`
	}
	if err := yaml.Unmarshal(data, &policy); err != nil || policy.Kind != "Policy" || len(policy.Rules) == 0 {
		t.Errorf("policy %s: %v", data, err)
	}

	// The option wins over the environment.
	own := t.TempDir()
	if flags := strings.Join(auditFlags(Options{AuditDir: own}, dir, io.Discard), " "); !strings.Contains(flags, "--audit-log-path="+own+"/") {
		t.Errorf("flags %q do not log to Options.AuditDir %s", flags, own)
	}
}
