package binaries

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/harness/versions"
)

func TestUseInstalledOnlyBuildsNothing(t *testing.T) {
	st := Store{Dir: t.TempDir()}
	_, _, err := st.Use(context.Background(), versions.Exactly(versions.MustParse("1.37.1")), UseOptions{InstalledOnly: true})
	if err == nil || !strings.Contains(err.Error(), "drop -i to download or build it") {
		t.Fatalf("got %v, want a store-only miss that says how to get the binaries", err)
	}
	if got, _ := filepath.Glob(filepath.Join(st.Dir, "k8s", "*")); len(got) != 0 {
		t.Errorf("installed-only use wrote %v", got)
	}
}
