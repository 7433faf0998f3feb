package repo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/harness/versions"
)

func TestLoadLockfile(t *testing.T) {
	const nodeImage = "nodeImage:\n  debianSuite: bookworm\n  debianMirror: http://deb.debian.org/debian\n  cniPlugins: v1.9.1\n  localPathProvisioner: v0.0.30\n"
	for _, tc := range []struct {
		name, content, wantErr string
	}{
		{name: "lanes", content: "default: 1.37.1\nversions:\n  - kubernetes: 1.37.1\n    etcd: 3.7.3\n  - kubernetes: 1.37.0\n    etcd: 3.7.0\n    lanes: [kind]\n" + nodeImage},
		{name: "unknown lane", content: "default: 1.37.1\nversions:\n  - kubernetes: 1.37.0\n    etcd: 3.7.0\n    lanes: [gke]\n" + nodeImage, wantErr: `versions[0].lanes: "gke" is not a lane`},
		{name: "no node image inputs", content: "default: 1.37.1\nversions: []\n", wantErr: "nodeImage needs"},
		{name: "unknown field", content: "default: 1.37.1\nkind: 1\n" + nodeImage, wantErr: "unknown field"},
		{name: "the library's checks", content: "default: 1.37\nversions: []\n" + nodeImage, wantErr: "versions.yaml: default: 1.37 names a minor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, versions.LockfileName), []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			l, err := LoadLockfile(dir)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := (NodeImage{DebianSuite: "bookworm", DebianMirror: "http://deb.debian.org/debian", CNIPlugins: "1.9.1", LocalPathProvisioner: "0.0.30"}); l.NodeImage != want {
				t.Errorf("NodeImage = %+v, want %+v", l.NodeImage, want)
			}
			v1370, v1371 := versions.MustParse("1.37.0"), versions.MustParse("1.37.1")
			if !l.InLane(v1371, LaneEnvtest) || !l.InLane(v1371, LaneKind) || l.InLane(v1370, LaneEnvtest) || !l.InLane(v1370, LaneKind) {
				t.Errorf("lanes: %v", l.lanes)
			}
		})
	}
}
