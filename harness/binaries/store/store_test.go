package store

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/harness/versions"
)

func TestDefaultDir(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the default tested is Linux's")
	}
	t.Setenv("XDG_DATA_HOME", "/data")
	if got, _ := DefaultDir(); got != "/data/kubebuilder-envtest" {
		t.Errorf("with $XDG_DATA_HOME: %s", got)
	}
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("HOME", "/home/u")
	if got, _ := DefaultDir(); got != "/home/u/.local/share/kubebuilder-envtest" {
		t.Errorf("without $XDG_DATA_HOME: %s", got)
	}
}

func TestLayout(t *testing.T) {
	v := versions.MustParse("v1.37.1")
	s := Store{Dir: "/s"}
	if got, want := s.VersionDir(v), filepath.Join("/s", "k8s", "1.37.1-"+runtime.GOOS+"-"+runtime.GOARCH); got != want {
		t.Errorf("VersionDir = %s, want %s", got, want)
	}
	if got, want := s.SourceDir("m@1"), filepath.Join("/s", "k8s", ".src", "m@1"); got != want {
		t.Errorf("SourceDir = %s, want %s", got, want)
	}
}

// TestListAndRemove: List lists the version directories, any platform's,
// newest first, and nothing else; Remove removes those a selector matches,
// and with none every version and the build modules.
func TestListAndRemove(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	for _, d := range []string{".src/m@1", "9.9.9-plan9-mips", "1.36.4-" + runtime.GOOS + "-" + runtime.GOARCH, "1.37.1-" + runtime.GOOS + "-" + runtime.GOARCH, "notes"} {
		if err := os.MkdirAll(filepath.Join(s.Dir, "k8s", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	list := func() string {
		all, err := s.List()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, in := range all {
			got = append(got, in.Version.String()+"-"+in.OS)
		}
		return strings.Join(got, " ")
	}
	if got, want := list(), "9.9.9-plan9 1.37.1-"+runtime.GOOS+" 1.36.4-"+runtime.GOOS; got != want {
		t.Errorf("List = %s, want %s", got, want)
	}
	removed, err := s.Remove(versions.MustParseSelector("1.37", versions.SourceArg))
	if err != nil || len(removed) != 1 || removed[0].Version.String() != "1.37.1" {
		t.Fatalf("Remove(1.37) = %v, %v", removed, err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir, "k8s", ".src")); err != nil {
		t.Errorf("Remove of a version took the build modules: %v", err)
	}
	if removed, err := s.Remove(versions.Selector{}); err != nil || len(removed) != 2 {
		t.Fatalf("Remove() = %v, %v", removed, err)
	}
	if got := list(); got != "" {
		t.Errorf("after Remove(): %s", got)
	}
	if _, err := os.Stat(filepath.Join(s.Dir, "k8s", ".src")); !os.IsNotExist(err) {
		t.Errorf("Remove() left the build modules (%v)", err)
	}
}

// TestDescribeOrigins: a binary whose record is missing, or about a file
// of another size, has its origin not recorded; files with no record and
// not named are not described.
func TestDescribeOrigins(t *testing.T) {
	dir := t.TempDir()
	if got := DescribeOrigins(dir, "etcd"); got != "" {
		t.Errorf("an empty directory: %q", got)
	}
	for name, content := range map[string]string{"etcd": "etcd", "kube-apiserver": "apiserver", "kubelet": "kubelet", "notes.txt": "notes"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	v := versions.MustParse("1.37.1")
	if err := Record(filepath.Join(dir, "kubelet"), Origin{How: OriginBuilt, Kubernetes: v, Source: "k8s.io/kubernetes@v1.37.1"}); err != nil {
		t.Fatal(err)
	}
	if err := WriteOrigin(filepath.Join(dir, "etcd"), Origin{How: OriginDownloaded, Kubernetes: v, Size: 99}); err != nil {
		t.Fatal(err)
	}
	if got, want := DescribeOrigins(dir, "etcd", "kube-apiserver"), "built: kubelet; origin not recorded: etcd, kube-apiserver"; got != want {
		t.Errorf("DescribeOrigins = %q, want %q", got, want)
	}
	if o, ok := ReadOrigin(dir, "kubelet"); !ok || !o.Describes(filepath.Join(dir, "kubelet")) {
		t.Errorf("ReadOrigin(kubelet) = %+v, %v", o, ok)
	}
}

// TestLink: a linked binary is the same file and takes its record along.
func TestLink(t *testing.T) {
	src, dst := filepath.Join(t.TempDir(), "etcd"), filepath.Join(t.TempDir(), "etcd")
	if err := os.WriteFile(src, []byte("etcd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Record(src, Origin{How: OriginBuilt, Source: "go.etcd.io/etcd/server/v3@v3.7.3"}); err != nil {
		t.Fatal(err)
	}
	if err := Link(src, dst); err != nil {
		t.Fatal(err)
	}
	if o, ok := ReadOrigin(filepath.Dir(dst), "etcd"); !ok || o.Source != "go.etcd.io/etcd/server/v3@v3.7.3" {
		t.Errorf("the link's record: %+v, %v", o, ok)
	}
}
