package envtest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
)

// controller-runtime's InstallCRDs updates every CRD that exists already:
// it reads it, and writes it back with the resourceVersion it read. On a
// plane whose etcd template holds the suite's CRDs that write changes
// nothing, yet the API server decodes, defaults and validates the whole
// CRD for it, about 150 ms for a CRD that embeds a PodTemplateSpec on 2
// cores, and most of a warm install. heldCRDs, the transport of the
// configuration Start hands that install, answers such an update itself
// with the object it has just read, which is what the API server answers
// to an update that changes nothing. Any other update (a CRD whose
// conversion webhook the install points at this start's webhook server, a
// CRD the template does not hold as the request has it, a
// resourceVersion other than the one just read) goes to the API server.

// crdsPath is the path of the CRDs' collection.
const crdsPath = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"

// heldCRDs answers updates that would leave a CRD as it is; each client
// made from the configuration has one over the same crdState.
type heldCRDs struct {
	next http.RoundTripper
	*crdState
}

// crdState is what the clients of one install know of the CRDs.
type crdState struct {
	// held is the content (crdContent) of each CRD the plane's etcd held
	// from its start, by name.
	held map[string][]byte

	mu sync.Mutex
	// read is the last answer to a read of each CRD, by name.
	read map[string][]byte
}

// withHeldCRDs returns a copy of cfg whose requests go through heldCRDs
// for crds, the CRDs the plane started with.
func withHeldCRDs(cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) *rest.Config {
	state := &crdState{held: map[string][]byte{}, read: map[string][]byte{}}
	for _, crd := range crds {
		if b, err := crdContent(crd); err == nil {
			state.held[crd.Name] = b
		}
	}
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &heldCRDs{next: rt, crdState: state}
	})
	return out
}

// crdContent is what of a CRD an etcd template holds (as
// harness/controlplane keys it): the name, labels, annotations and spec.
func crdContent(crd *apiextensionsv1.CustomResourceDefinition) ([]byte, error) {
	return json.Marshal(struct {
		Name        string                                       `json:"name"`
		Labels      map[string]string                            `json:"labels,omitempty"`
		Annotations map[string]string                            `json:"annotations,omitempty"`
		Spec        apiextensionsv1.CustomResourceDefinitionSpec `json:"spec"`
	}{crd.Name, crd.Labels, crd.Annotations, crd.Spec})
}

// RoundTrip implements http.RoundTripper.
func (h *heldCRDs) RoundTrip(req *http.Request) (*http.Response, error) {
	name, ok := strings.CutPrefix(req.URL.Path, crdsPath)
	if !ok || name == "" || strings.Contains(name, "/") || req.URL.RawQuery != "" {
		return h.next.RoundTrip(req)
	}
	switch req.Method {
	case http.MethodGet:
		return h.get(req, name)
	case http.MethodPut:
		return h.put(req, name)
	}
	return h.next.RoundTrip(req)
}

// get passes a read on, keeping the CRD it answers.
func (h *heldCRDs) get(req *http.Request, name string) (*http.Response, error) {
	resp, err := h.next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK || !isJSON(resp.Header) {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	h.mu.Lock()
	h.read[name] = body
	h.mu.Unlock()
	return resp, nil
}

// put answers an update that would change nothing with the CRD as last
// read, and passes any other on.
func (h *heldCRDs) put(req *http.Request, name string) (*http.Response, error) {
	h.mu.Lock()
	read := h.read[name]
	h.mu.Unlock()
	held := h.held[name]
	if read == nil || held == nil || req.GetBody == nil || !isJSON(req.Header) {
		return h.next.RoundTrip(req)
	}
	body, err := req.GetBody()
	if err != nil {
		return h.next.RoundTrip(req)
	}
	sent, err := io.ReadAll(body)
	_ = body.Close()
	if err != nil || !unchanged(sent, read, held) {
		return h.next.RoundTrip(req)
	}
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return &http.Response{
		Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": []string{"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(read)),
		ContentLength: int64(len(read)),
		Request:       req,
	}, nil
}

// unchanged reports whether the update sent, of the CRD last read as
// read, carries the content the template holds (held), the
// resourceVersion read, and nothing else an update could change: no
// status, finalizers or owners.
func unchanged(sent, read, held []byte) bool {
	var s, r apiextensionsv1.CustomResourceDefinition
	if json.Unmarshal(sent, &s) != nil || json.Unmarshal(read, &r) != nil {
		return false
	}
	if s.ResourceVersion == "" || s.ResourceVersion != r.ResourceVersion || s.Name != r.Name {
		return false
	}
	if len(s.Finalizers) > 0 || len(s.OwnerReferences) > 0 || len(s.Status.Conditions) > 0 || len(s.Status.StoredVersions) > 0 {
		return false
	}
	got, err := crdContent(&s)
	return err == nil && bytes.Equal(got, held)
}

func isJSON(h http.Header) bool {
	return strings.HasPrefix(h.Get("Content-Type"), "application/json")
}
