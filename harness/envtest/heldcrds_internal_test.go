package envtest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// apiServer answers reads of one CRD with stored and counts the updates
// that reach it.
type apiServer struct {
	stored  []byte
	updates int
}

func (a *apiServer) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPut {
		a.updates++
	}
	return &http.Response{
		StatusCode: http.StatusOK, Header: http.Header{"Content-Type": []string{"application/json"}},
		Body: io.NopCloser(bytes.NewReader(a.stored)), Request: req,
	}, nil
}

func widget() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com", Labels: map[string]string{"app": "w"}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true}},
		},
	}
}

// An update that carries the CRD as the template holds it, on the
// resourceVersion just read, is answered with the CRD as read; any other
// update reaches the API server.
func TestHeldCRDsAnswerUpdatesThatChangeNothing(t *testing.T) {
	stored := widget()
	stored.ResourceVersion, stored.UID = "42", "u"
	stored.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}
	storedJSON, err := json.Marshal(stored)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		// change makes the update from the CRD the template holds.
		change      func(*apiextensionsv1.CustomResourceDefinition)
		readFirst   bool
		wantUpdates int
	}{
		{name: "the CRD as held", change: func(*apiextensionsv1.CustomResourceDefinition) {}, readFirst: true, wantUpdates: 0},
		{name: "without a read before", change: func(*apiextensionsv1.CustomResourceDefinition) {}, wantUpdates: 1},
		{name: "another resourceVersion", change: func(c *apiextensionsv1.CustomResourceDefinition) { c.ResourceVersion = "41" }, readFirst: true, wantUpdates: 1},
		{name: "a conversion webhook", readFirst: true, wantUpdates: 1, change: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
		}},
		{name: "another label", change: func(c *apiextensionsv1.CustomResourceDefinition) { c.Labels = nil }, readFirst: true, wantUpdates: 1},
		{name: "a finalizer", change: func(c *apiextensionsv1.CustomResourceDefinition) { c.Finalizers = []string{"f"} }, readFirst: true, wantUpdates: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := &apiServer{stored: storedJSON}
			cfg := withHeldCRDs(&rest.Config{Host: "https://127.0.0.1"}, []*apiextensionsv1.CustomResourceDefinition{widget()})
			rt := cfg.WrapTransport(api)
			url := "https://127.0.0.1" + crdsPath + "widgets.example.com"
			if tc.readFirst {
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				resp, err := rt.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				got, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if !bytes.Equal(got, storedJSON) {
					t.Fatalf("the read answered %s, want %s", got, storedJSON)
				}
			}
			update := widget()
			update.ResourceVersion = "42"
			tc.change(update)
			body, err := json.Marshal(update)
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest(http.MethodPut, url, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !bytes.Equal(got, storedJSON) {
				t.Errorf("the update answered %d %s, want 200 and the CRD as stored", resp.StatusCode, got)
			}
			if api.updates != tc.wantUpdates {
				t.Errorf("%d updates reached the API server, want %d", api.updates, tc.wantUpdates)
			}
		})
	}
}
