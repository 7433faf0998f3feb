package certs

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// rbacRule is one +kubebuilder:rbac marker of this package.
type rbacRule struct {
	file                                    string
	groups, resources, resourceNames, verbs []string
}

func rbacMarkers(t *testing.T) []rbacRule {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var rules []rbacRule
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(data)) {
			rest, ok := strings.CutPrefix(strings.TrimSpace(line), "// +kubebuilder:rbac:")
			if !ok {
				continue
			}
			r := rbacRule{file: f}
			for kv := range strings.SplitSeq(rest, ",") {
				k, v, _ := strings.Cut(kv, "=")
				values := strings.Split(v, ";")
				switch k {
				case "groups":
					r.groups = values
				case "resources":
					r.resources = values
				case "resourceNames":
					r.resourceNames = values
				case "verbs":
					r.verbs = values
				}
			}
			rules = append(rules, r)
		}
	}
	return rules
}

// TestCSRDeleteMarkerNamesTheManagersRequests: the manager may delete only
// the CertificateSigningRequests it requests under, and the names in the
// marker are those the default options make.
func TestCSRDeleteMarkerNamesTheManagersRequests(t *testing.T) {
	o := Options{}.Defaulted()
	if DefaultCSRName != o.CSRName() {
		t.Errorf("DefaultCSRName = %q, but the default options request under %q", DefaultCSRName, o.CSRName())
	}
	if diff := cmp.Diff([]string{DefaultCSRName, DefaultFallbackCSRName}, o.CSRNames()); diff != "" {
		t.Errorf("default CSR names (-constants +options):\n%s", diff)
	}
	var deletes []rbacRule
	for _, r := range rbacMarkers(t) {
		if slices.Contains(r.resources, "certificatesigningrequests") && slices.Contains(r.verbs, "delete") {
			deletes = append(deletes, r)
		}
	}
	if len(deletes) != 1 {
		t.Fatalf("%d markers grant delete on certificatesigningrequests, want exactly 1: %+v", len(deletes), deletes)
	}
	if diff := cmp.Diff(o.CSRNames(), deletes[0].resourceNames); diff != "" {
		t.Errorf("%s: resourceNames of delete on certificatesigningrequests (-default options' CSRNames +marker):\n%s", deletes[0].file, diff)
	}
	if diff := cmp.Diff([]string{"certificatesigningrequests"}, deletes[0].resources); diff != "" {
		t.Errorf("the delete marker names other resources too:\n%s", diff)
	}
}

// TestInjectorPatchMarkersNameTheShippedObjects: the manager may patch
// exactly the objects readiness and rotation wait for.
func TestInjectorPatchMarkersNameTheShippedObjects(t *testing.T) {
	got := map[string][]string{}
	for _, r := range rbacMarkers(t) {
		if slices.Contains(r.verbs, "patch") && r.file == "injector.go" {
			for _, res := range r.resources {
				got[res] = append(got[res], r.resourceNames...)
			}
		}
	}
	want := map[string][]string{}
	for _, k := range []kind{mutatingKind, validatingKind, crdKind} {
		want[k.Resource] = k.Shipped
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("patch markers in injector.go (-shipped names +markers):\n%s", diff)
	}
}

// TestSecretMarkersNameTheManagersSecrets: of Secrets, the manager may
// list, watch and create (which RBAC cannot limit to names); every other
// verb names the one Secret of its own that needs it (the CA Secret is
// patched, the serving Secret updated), so it can write no other Secret of
// its namespace.
func TestSecretMarkersNameTheManagersSecrets(t *testing.T) {
	got := map[string][]string{}
	for _, r := range rbacMarkers(t) {
		if !slices.Contains(r.resources, "secrets") {
			continue
		}
		if len(r.resources) != 1 {
			t.Errorf("%s: a Secret marker names other resources too: %v", r.file, r.resources)
		}
		for _, v := range r.verbs {
			if len(r.resourceNames) == 0 {
				got[v] = append(got[v], "*")
			}
			got[v] = append(got[v], r.resourceNames...)
		}
	}
	want := map[string][]string{
		"list": {"*"}, "watch": {"*"}, "create": {"*"},
		"patch":  {CASecretName},
		"update": {ServingSecretName},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Secret verbs and the names they are limited to, * for none (-want +markers):\n%s", diff)
	}
}
