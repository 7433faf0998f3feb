package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestCNIConfig(t *testing.T) {
	raw := cniConfig([]string{"10.244.1.0/24", "fd00:10:244:1::/64"})
	var cfg struct {
		CNIVersion string `json:"cniVersion"`
		Plugins    []struct {
			Type string `json:"type"`
			IPAM struct {
				Type   string `json:"type"`
				Ranges [][]struct {
					Subnet string `json:"subnet"`
				} `json:"ranges"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatalf("the CNI configuration is not JSON: %v\n%s", err, raw)
	}
	if len(cfg.Plugins) != 2 || cfg.Plugins[0].Type != "ptp" || cfg.Plugins[1].Type != "portmap" {
		t.Fatalf("plugins: want ptp then portmap, got %+v", cfg.Plugins)
	}
	r := cfg.Plugins[0].IPAM.Ranges
	if cfg.Plugins[0].IPAM.Type != "host-local" || len(r) != 1 || r[0][0].Subnet != "10.244.1.0/24" {
		t.Fatalf("ipam: want host-local over the node's IPv4 podCIDR only, got %+v", cfg.Plugins[0].IPAM)
	}
}

func TestWriteCNIConfigOnlyWhenChanged(t *testing.T) {
	dir := t.TempDir()
	if err := writeCNIConfig(dir, []string{"10.244.2.0/24"}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "10-kubeharness.conflist")
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	// The container runtime watches the directory: rewriting an unchanged
	// file would make it reload for nothing.
	if err := os.Chtimes(path, before.ModTime().Add(-3600e9), before.ModTime().Add(-3600e9)); err != nil {
		t.Fatal(err)
	}
	if err := writeCNIConfig(dir, []string{"10.244.2.0/24"}); err != nil {
		t.Fatal(err)
	}
	again, _ := os.Stat(path)
	if !again.ModTime().Before(before.ModTime()) {
		t.Error("an unchanged configuration was written again")
	}
	if err := writeCNIConfig(dir, []string{"10.244.3.0/24"}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if want := cniConfig([]string{"10.244.3.0/24"}); string(data) != want {
		t.Errorf("a changed podCIDR was not written:\n%s", data)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Error("the temporary file was left behind")
	}
}
