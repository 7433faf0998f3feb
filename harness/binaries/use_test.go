package binaries

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
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

// releasesProxy is workplaceProxy that also lists the minors it has
// releases of.
type releasesProxy struct {
	*fakeProxy
	minors []string
}

func (p releasesProxy) Releases(context.Context) ([]versions.Selector, error) {
	var out []versions.Selector
	for _, m := range p.minors {
		out = append(out, versions.MustParseSelector(m, versions.SourceArg))
	}
	return out, nil
}

// TestListOutsideAProject: outside a project the versions available are
// the newest patch of each of the NewestMinors newest minors the proxy
// lists; what the store holds comes first, with its origins.
func TestListOutsideAProject(t *testing.T) {
	binDir := envtestStore(t, "1.36.4")
	proxy := releasesProxy{fakeProxy: workplaceProxy(), minors: []string{"1.38", "1.37", "1.36", "1.35"}}
	res := &versions.Resolver{Lock: &versions.Lockfile{}, Proxy: proxy}
	listed, err := Store{Dir: binDir}.List(context.Background(), versions.Selector{}, false, res)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range listed {
		got = append(got, fmt.Sprintf("%s %v", l.Version, l.Installed))
	}
	if want := []string{"1.36.4 true", "1.37.1 false"}; !slices.Equal(got, want) {
		t.Errorf("List = %v, want %v", got, want)
	}
	if slices.Contains(proxy.calls, "lists 1.35.0") {
		t.Errorf("asked the proxy of the fourth minor: %v", proxy.calls)
	}
	if !listed[0].Installed || listed[0].Origins == "" || listed[0].Dir != StoreDir(binDir, versions.MustParse("1.36.4")) {
		t.Errorf("the installed version: %+v", listed[0])
	}
}

// TestRemove: Remove takes the versions a selector names, and every one
// with the build modules when it names none.
func TestRemove(t *testing.T) {
	binDir := envtestStore(t, "1.36.4", "1.37.1")
	st := Store{Dir: binDir}
	removed, err := st.Remove(versions.MustParseSelector("1.37", versions.SourceArg))
	if err != nil || len(removed) != 1 || removed[0].Version.String() != "1.37.1" {
		t.Fatalf("Remove(1.37) = %v, %v", removed, err)
	}
	if removed, err := st.Remove(versions.Selector{}); err != nil || len(removed) != 1 {
		t.Fatalf("Remove() = %v, %v", removed, err)
	}
	if all, _ := ListInstalled(binDir); len(all) != 0 {
		t.Errorf("left %v", all)
	}
}

// TestUseEnvWins: with EnvWins, $KUBEBUILDER_ASSETS is taken when it
// holds the version asked for, and is an error when it does not; nothing
// is resolved or provided.
func TestUseEnvWins(t *testing.T) {
	assets := fakeControlPlane(t, t.TempDir(), "1.37.1")
	t.Setenv(AssetsEnv, assets)
	proxy := workplaceProxy()
	st := Store{Dir: t.TempDir(), Out: io.Discard}
	opts := UseOptions{Components: DefaultComponents, EnvWins: true, Resolver: &versions.Resolver{Lock: testLock(), Proxy: proxy}}
	dir, v, err := st.Use(context.Background(), versions.MustParseSelector("1.37", versions.SourceArg), opts)
	if err != nil || dir != assets || v.String() != "1.37.1" {
		t.Errorf("Use(1.37) = %s, %s, %v", dir, v, err)
	}
	_, _, err = st.Use(context.Background(), versions.MustParseSelector("1.36", versions.SourceArg), opts)
	wantErr(t, err, "VERSION argument 1.36 asks for Kubernetes 1.36, but $KUBEBUILDER_ASSETS="+assets+" holds 1.37.1")
	if len(proxy.calls) > 0 {
		t.Errorf("asked the proxy %v", proxy.calls)
	}
}
