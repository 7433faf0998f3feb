package versions

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLoadLockfile(t *testing.T) {
	const nodeImage = "nodeImage:\n  debianSuite: bookworm\n  debianMirror: http://deb.debian.org/debian\n  cniPlugins: v1.9.1\n  localPathProvisioner: v0.0.30\n"
	cases := []struct {
		name    string
		content string
		want    *Lockfile
		wantErr string
	}{
		{
			name:    "versions with and without v",
			content: "default: v1.37.1\nversions:\n  - kubernetes: 1.37.1\n    etcd: v3.7.3\n" + nodeImage,
			want:    &Lockfile{Default: MustParse("1.37.1"), Versions: []Entry{{Kubernetes: MustParse("1.37.1"), Etcd: MustParse("3.7.3")}}},
		},
		{
			name:    "kind node image without digest",
			content: "default: 1.37.0\nversions:\n  - kubernetes: 1.37.0\n    etcd: 3.7.0\n    kindNode: kindest/node:v1.37.0\n" + nodeImage,
			wantErr: "not pinned by digest",
		},
		{
			// A project's own keys are its tools' to read.
			name:    "a project's own keys",
			content: "default: 1.37.1\nversions:\n  - kubernetes: 1.37.0\n    etcd: 3.7.0\n    lanes: [kind]\n" + nodeImage,
			want:    &Lockfile{Default: MustParse("1.37.1"), Versions: []Entry{{Kubernetes: MustParse("1.37.0"), Etcd: MustParse("3.7.0")}}},
		},
		{name: "no default", content: "versions: []\n", wantErr: "no default version"},
		{name: "entry without etcd", content: "default: 1.37.1\nversions:\n  - kubernetes: 1.37.1\n", wantErr: "needs both kubernetes and etcd"},
		// versions.yaml's default is checked as any request is, and its
		// error says where it came from.
		{name: "pre-release default", content: "default: 1.37.1-rc.0\nversions: []\n" + nodeImage, wantErr: "versions.yaml: default: 1.37.1-rc.0 is a pre-release"},
		{name: "minor default", content: "default: 1.37\nversions: []\n" + nodeImage, wantErr: "versions.yaml: default: 1.37 names a minor"},
		{name: "etcd pre-release", content: "default: 1.37.1\nversions:\n  - kubernetes: 1.37.1\n    etcd: 3.7.0-rc.1\n" + nodeImage, wantErr: "versions[0].etcd: 3.7.0-rc.1 is a pre-release"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, LockfileName), []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := LoadLockfile(dir)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("lockfile (-want +got):\n%s", diff)
			}
		})
	}
}

// TestExplain: a request that is no version gets the versions
// versions.yaml pins as examples; a pre-release, whose error says what to
// ask for already, and other errors do not.
func TestExplain(t *testing.T) {
	_, bad := ParseSelector("latest", SourceEnv)
	got := testLock().Explain(bad)
	for _, want := range []string{"K8S_VERSION=latest is not a Kubernetes version", "Versions that can be built: 1.37.1, 1.37.0, 1.36.4, 1.35.4 (those in versions.yaml", "e.g. K8S_VERSION=1.37.1, or for a minor, e.g. K8S_VERSION=1.37"} {
		if !strings.Contains(got.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, got)
		}
	}
	var selErr *SelectorError
	if !errors.As(got, &selErr) {
		t.Errorf("Explain hides the *SelectorError: %#v", got)
	}
	_, pre := ParseSelector("1.37.1-rc.0", SourceEnv)
	if got := testLock().Explain(pre); got.Error() != pre.Error() {
		t.Errorf("Explain(pre-release) = %v", got)
	}
	other := errors.New("other")
	if got := testLock().Explain(other); got.Error() != other.Error() {
		t.Errorf("Explain(other) = %v", got)
	}
}
