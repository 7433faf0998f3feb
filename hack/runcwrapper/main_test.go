package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCommand(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"create", "--bundle", "/b", "id"}, "create"},
		{[]string{"--root", "/run/runc", "--log", "/l.json", "run", "-b", "/b", "id"}, "run"},
		{[]string{"--systemd-cgroup", "exec", "--process", "/p.json", "id"}, "exec"},
		{[]string{"--version"}, ""},
	}
	for _, tc := range cases {
		if got := command(tc.args); got != tc.want {
			t.Errorf("command(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

func TestRewriteDropsOnlyTheCapability(t *testing.T) {
	bundle := t.TempDir()
	config := map[string]any{
		"ociVersion": "1.0.2",
		"process": map[string]any{
			"args": []any{"/sbin/init"},
			"capabilities": map[string]any{
				"bounding":  []any{"CAP_CHOWN", "CAP_SYS_RESOURCE", "CAP_SYS_ADMIN"},
				"effective": []any{"CAP_SYS_RESOURCE"},
				"permitted": []any{"CAP_CHOWN"},
			},
		},
		"linux": map[string]any{"namespaces": []any{map[string]any{"type": "pid"}}},
	}
	write(t, filepath.Join(bundle, "config.json"), config)
	if err := rewrite([]string{"--root", "/r", "create", "--bundle", bundle, "c1"}); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"ociVersion": "1.0.2",
		"process": map[string]any{
			"args": []any{"/sbin/init"},
			"capabilities": map[string]any{
				"bounding":  []any{"CAP_CHOWN", "CAP_SYS_ADMIN"},
				"effective": []any{},
				"permitted": []any{"CAP_CHOWN"},
			},
		},
		"linux": map[string]any{"namespaces": []any{map[string]any{"type": "pid"}}},
	}
	if diff := cmp.Diff(want, read(t, filepath.Join(bundle, "config.json"))); diff != "" {
		t.Errorf("config.json (-want +got):\n%s", diff)
	}
}

func TestRewriteExecProcessFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "process.json")
	write(t, p, map[string]any{"args": []any{"sh"}, "capabilities": map[string]any{"ambient": []any{"CAP_SYS_RESOURCE", "CAP_NET_ADMIN"}}})
	if err := rewrite([]string{"exec", "--process=" + p, "c1"}); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"args": []any{"sh"}, "capabilities": map[string]any{"ambient": []any{"CAP_NET_ADMIN"}}}
	if diff := cmp.Diff(want, read(t, p)); diff != "" {
		t.Errorf("process.json (-want +got):\n%s", diff)
	}
}

func write(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}
