package bundle

import (
	"encoding/base64"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The values of the test's Secret: what a bundle must not show, in any
// form.
const (
	secretPassword = "hunter2-s3cret-pw"
	secretToken    = "tok-9f2c1e0d-only-in-stringData"
)

// secretObject is a Secret as the API server lists it (no kind on a list's
// item is set by Write before Sanitize sees it), applied with kubectl:
// its last-applied annotation repeats the values.
func secretObject() *unstructured.Unstructured {
	lastApplied := `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db","namespace":"ns"},` +
		`"stringData":{"password":"` + secretPassword + `","token":"` + secretToken + `"}}`
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"metadata": map[string]any{
			"name":      "db",
			"namespace": "ns",
			"annotations": map[string]any{
				"kubectl.kubernetes.io/last-applied-configuration": lastApplied,
				"team": "widgets",
			},
			"managedFields": []any{map[string]any{"manager": "kubectl"}},
		},
		"type": "Opaque",
		"data": map[string]any{
			"password": base64.StdEncoding.EncodeToString([]byte(secretPassword)),
			"empty":    "",
		},
		"stringData": map[string]any{"token": secretToken},
	}}
}

// assertNoSecret fails when text holds a value of secretObject, as itself
// or in base64.
func assertNoSecret(t *testing.T, text string) {
	t.Helper()
	for _, v := range []string{secretPassword, secretToken} {
		for _, form := range []string{v, base64.StdEncoding.EncodeToString([]byte(v)), base64.StdEncoding.EncodeToString([]byte(v))[:12]} {
			if strings.Contains(text, form) {
				t.Errorf("the bundle shows the Secret's value %q (as %q):\n%s", v, form, text)
			}
		}
	}
}

func TestSanitizeKeepsASecretsKeysNotItsValues(t *testing.T) {
	in := secretObject()
	before := in.DeepCopy()
	out := Sanitize(in)
	if !reflect.DeepEqual(in, before) {
		t.Error("Sanitize changed the object it was given")
	}
	text, err := yaml.Marshal(out.Object)
	if err != nil {
		t.Fatal(err)
	}
	assertNoSecret(t, string(text))
	data, _, _ := unstructured.NestedStringMap(out.Object, "data")
	// printf %s hunter2-s3cret-pw | sha256sum begins so, as does the
	// SHA-256 of nothing.
	want := map[string]string{
		"password": "<redacted: 17 bytes, sha256:d200b7fced6fae86>",
		"empty":    "<redacted: 0 bytes, sha256:e3b0c44298fc1c14>",
	}
	if !reflect.DeepEqual(data, want) {
		t.Errorf("data: got %v, want %v", data, want)
	}
	if got := Redacted([]byte("test")); got != "<redacted: 4 bytes, sha256:9f86d081884c7d65>" {
		t.Errorf("Redacted(test) = %q, want its length and the first 16 digits of its SHA-256", got)
	}
	stringData, _, _ := unstructured.NestedStringMap(out.Object, "stringData")
	if got, want := stringData["token"], Redacted([]byte(secretToken)); got != want {
		t.Errorf("stringData.token: got %q, want %q", got, want)
	}
	ann := out.GetAnnotations()
	if got := ann["kubectl.kubernetes.io/last-applied-configuration"]; !strings.HasPrefix(got, "<left out of the bundle: ") {
		t.Errorf("last-applied annotation: got %q, want it left out", got)
	}
	if ann["team"] != "widgets" || out.GetName() != "db" || out.Object["type"] != "Opaque" {
		t.Errorf("Sanitize lost what is no secret: %v", out.Object)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(out.Object, "metadata", "managedFields"); found {
		t.Error("managedFields kept")
	}
}

// Every kind loses its last-applied annotation (a ConfigMap's may hold a
// value since removed from it); nothing else of a ConfigMap is changed.
func TestSanitizeDropsLastAppliedOfEveryKind(t *testing.T) {
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata": map[string]any{
			"name": "settings",
			"annotations": map[string]any{
				"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"password":"` + secretPassword + `"}}`,
			},
		},
		"data": map[string]any{"mode": "fast"},
	}}
	out := Sanitize(cm)
	text, _ := yaml.Marshal(out.Object)
	assertNoSecret(t, string(text))
	if got, _, _ := unstructured.NestedString(out.Object, "data", "mode"); got != "fast" {
		t.Errorf("a ConfigMap's data changed: %s", text)
	}
	// A Secret-like object of another group is not a Secret.
	other := secretObject()
	other.SetAPIVersion("example.com/v1")
	if got, _, _ := unstructured.NestedString(Sanitize(other).Object, "stringData", "token"); got != secretToken {
		t.Errorf("example.com's Secret was taken for a core Secret: %q", got)
	}
}
