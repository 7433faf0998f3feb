package sidecar_test

import (
	"bytes"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kubeharness/kubeharness/internal/admissiontest"
	"github.com/kubeharness/kubeharness/internal/scheme"
	"github.com/kubeharness/kubeharness/webhook/sidecar"
)

// managerNamespace stands in for the namespace the manager passes as
// SkipNamespaces.
const managerNamespace = "kubeharness-system"

// FuzzInjector posts arbitrary bodies to the sidecar injector as the manager
// registers it. Besides what every answer must be (see serve), it patches
// only Pod creations outside the namespaces it skips, and a patch yields
// exactly the injected Pod: Inject's containers and annotation added,
// everything the Pod carried kept, fields this build does not know
// included. The injected Pod, sent again, is left alone.
func FuzzInjector(f *testing.F) {
	addSeeds(f)
	s := scheme.New()
	hook := admissiontest.Quiet(&admission.Webhook{Handler: sidecar.NewInjector(s, sidecar.DefaultConfig(), managerNamespace)})
	decoder := admission.NewDecoder(s)
	f.Fuzz(func(t *testing.T, body []byte) {
		// The API server re-encodes the built-in objects it sends, their
		// quantities canonical; ParseQuantity can take minutes on forms it
		// never sends (see safequantity).
		if req, _ := admissiontest.DecodeReview(body); req != nil && !admissiontest.APIServerCould(req.Object.Raw, req.OldObject.Raw) {
			return
		}
		req, resp := admissiontest.Serve(t, hook, body)
		if req == nil {
			return
		}
		switch req.Namespace {
		case "kube-system", "kube-public", "kube-node-lease", managerNamespace:
			if !resp.Allowed || len(resp.Patch) != 0 {
				t.Fatalf("a request in namespace %s: allowed %v, patch %s; want allowed unchanged", req.Namespace, resp.Allowed, resp.Patch)
			}
			return
		}
		if req.Operation != admissionv1.Create {
			if !resp.Allowed || len(resp.Patch) != 0 {
				t.Fatalf("%s: allowed %v, patch %s; want allowed unchanged", req.Operation, resp.Allowed, resp.Patch)
			}
			return
		}
		pod := &corev1.Pod{}
		if err := decoder.Decode(admission.Request{AdmissionRequest: *req}, pod); err != nil {
			if resp.Allowed {
				t.Fatalf("allowed a Pod that does not decode: %v", err)
			}
			return
		}
		if !resp.Allowed {
			t.Fatalf("denied a Pod that decodes: %+v", resp.Result)
		}
		want := pod.DeepCopy()
		if !sidecar.Inject(want, sidecar.DefaultConfig()) {
			if len(resp.Patch) != 0 {
				t.Fatalf("patched a Pod that is not to be injected: %s", resp.Patch)
			}
			return
		}
		// The API server sends objects it encoded itself, never with
		// duplicate keys, on which JSON decoders disagree.
		if admissiontest.HasDuplicateKeys(req.Object.Raw) {
			return
		}
		patched := admissiontest.ApplyPatch(t, req.Object.Raw, resp)
		got := &corev1.Pod{}
		if err := decoder.DecodeRaw(runtime.RawExtension{Raw: patched}, got); err != nil {
			t.Fatalf("the patched Pod %s does not decode: %v", patched, err)
		}
		if !equality.Semantic.DeepEqual(want, got) {
			t.Fatalf("patch %s turned the Pod into %+v, want %+v", resp.Patch, got, want)
		}
		if lost := admissiontest.LostValues(t, req.Object.Raw, patched, injectedFirst); len(lost) > 0 {
			t.Fatalf("patch %s dropped %v from the Pod", resp.Patch, lost)
		}
		again := *req
		again.Object = runtime.RawExtension{Raw: patched}
		if _, resp := admissiontest.Serve(t, hook, admissiontest.ReviewJSON(t, &again)); !resp.Allowed || len(resp.Patch) != 0 {
			t.Fatalf("the injected Pod %s, sent again: allowed %v, patch %s; want allowed with no patch", patched, resp.Allowed, resp.Patch)
		}
	})
}

// injectedFirst: the injected init container comes first, so the Pod's
// own init containers move down one.
func injectedFirst(path string) int {
	if path == "/spec/initContainers" {
		return 1
	}
	return 0
}

// addSeeds adds the sidecar admission fixtures and reviews for the cases
// they lack: dry runs, a field this build does not know, a v1beta1 review,
// a wrong kind, a missing object and huge fields.
func addSeeds(f *testing.F) {
	admissiontest.AddFixtures(f, "../../fixtures/admission/sidecar/*.request.yaml")
	review := func(op, namespace, object, extra string) []byte {
		s := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"3c1d0000-3333-4000-8000-000000000001",` +
			`"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},` +
			`"name":"web","namespace":"` + namespace + `","operation":"` + op + `","userInfo":{"username":"admin"}` + extra
		if object != "" {
			s += `,"object":` + object
		}
		return []byte(s + `}}`)
	}
	pod := func(spec string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"shop","annotations":{"a/b~c":"d"}},"spec":` + spec + `}`
	}
	plain := pod(`{"containers":[{"name":"web","image":"nginx:1.27","resources":{"limits":{"cpu":"0.5"}}}]}`)
	for _, body := range [][]byte{
		review("CREATE", "shop", plain, `,"dryRun":true`),
		review("CREATE", "shop", pod(`{"initContainers":[{"name":"setup","image":"busybox","futureField":{"x":1}}],"containers":[{"name":"web","image":"nginx"}],"futureField":true}`), ""),
		review("CREATE", "shop", `{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"web-"}}`, ""),
		review("CREATE", "shop", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","annotations":null},"spec":{"containers":null,"initContainers":null}}`, ""),
		review("CREATE", "shop", pod(`{"containers":[{"name":"web","image":"`+strings.Repeat("n", 1<<14)+`"}]}`), ""),
		review("UPDATE", "shop", plain, `,"subResource":"status"`),
		review("DELETE", "shop", "", ""),
		review("CREATE", "kube-system", plain, ""),
		review("CREATE", "shop", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"web"}}`, ""),
		review("CREATE", "shop", `{"apiVersion":"v1","kind":"Pod","spec":{"containers":{}}}`, ""),
		review("CREATE", "shop", "", ""),
		bytes.Replace(review("CREATE", "shop", plain, ""), []byte("admission.k8s.io/v1"), []byte("admission.k8s.io/v1beta1"), 1),
		[]byte(`{"request":{"uid":"x","operation":"CREATE","object":{}}}`),
		[]byte(`not json`),
		{},
	} {
		f.Add(body)
	}
}
