package bundle

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// fakeAPIServer answers what Write asks of an API server: discovery of
// core v1's secrets, configmaps and events, and their lists in namespace
// ns, holding secretObject (as a list's item, without its kind, as
// kube-apiserver lists it) and a ConfigMap. TestWriteToARealAPIServer
// does the same against kube-apiserver where its binaries are.
func fakeAPIServer(t *testing.T) *rest.Config {
	t.Helper()
	secret := secretObject().Object
	delete(secret, "kind")
	delete(secret, "apiVersion")
	delete(secret, "stringData") // write-only: the API server never returns it
	replies := map[string]any{
		"/api":  map[string]any{"kind": "APIVersions", "versions": []string{"v1"}},
		"/apis": map[string]any{"kind": "APIGroupList", "apiVersion": "v1", "groups": []any{}},
		"/api/v1": map[string]any{"kind": "APIResourceList", "groupVersion": "v1", "resources": []any{
			map[string]any{"name": "secrets", "namespaced": true, "kind": "Secret", "verbs": []string{"list", "get"}},
			map[string]any{"name": "configmaps", "namespaced": true, "kind": "ConfigMap", "verbs": []string{"list", "get"}},
			map[string]any{"name": "events", "namespaced": true, "kind": "Event", "verbs": []string{"list", "get"}},
		}},
		"/api/v1/namespaces/ns/secrets": map[string]any{"kind": "SecretList", "apiVersion": "v1", "metadata": map[string]any{}, "items": []any{secret}},
		"/api/v1/namespaces/ns/configmaps": map[string]any{"kind": "ConfigMapList", "apiVersion": "v1", "metadata": map[string]any{}, "items": []any{
			map[string]any{"metadata": map[string]any{"name": "settings", "namespace": "ns"}, "data": map[string]any{"mode": "fast"}},
		}},
		"/api/v1/namespaces/ns/events": map[string]any{"kind": "EventList", "apiVersion": "v1", "metadata": map[string]any{}, "items": []any{}},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reply, ok := replies[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(reply)
	}))
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}
}

// A Secret in the spec's namespace: objects.yaml shows its keys, each
// value's length and hash, and neither its values nor the last-applied
// annotation that repeats them.
func TestWriteLeavesSecretDataOut(t *testing.T) {
	dir := Dir(t.TempDir(), "widgets keep a secret")
	b := Bundle{Config: fakeAPIServer(t), Namespace: "ns", Start: time.Now(), End: time.Now()}
	if err := b.Write(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	objects, err := os.ReadFile(filepath.Join(dir, ObjectsFile))
	if err != nil {
		t.Fatal(err)
	}
	text := string(objects)
	assertNoSecret(t, text)
	for _, want := range []string{
		"kind: Secret", "name: db",
		"password: '<redacted: 17 bytes, sha256:d200b7fced6fae86>'",
		"empty: '<redacted: 0 bytes, sha256:e3b0c44298fc1c14>'",
		"kubectl.kubernetes.io/last-applied-configuration: '<left out of the bundle: ",
		"kind: ConfigMap", "mode: fast",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("objects.yaml lacks %q:\n%s", want, text)
		}
	}
}
