package sidecar

import (
	"context"
	"flag"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kubeharness/kubeharness/internal/admissiontest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// managerNamespace stands in for the namespace the manager passes as
// SkipNamespaces.
const managerNamespace = "kubeharness-system"

// fixtures is the sidecar fixture suite; call it inside a test, once the
// -update flag is parsed.
func fixtures() admissiontest.Suite {
	return admissiontest.Suite{
		Dir:        "../../fixtures/admission/sidecar",
		UpdateHint: "go test ./webhook/sidecar -update",
		Update:     *update,
	}
}

// TestFixtures sends every request fixture through the webhook as the
// server would, compares the outcome with its golden file, and sends the
// resulting Pod again to check that the webhook has nothing left to change.
func TestFixtures(t *testing.T) {
	hook := &admission.Webhook{Handler: NewInjector(clientgoscheme.Scheme, DefaultConfig(), managerNamespace)}
	fixtures().Run(t, hook, func(t *testing.T, req admission.Request, result []byte) {
		again := req
		again.OldObject = req.Object
		again.Object = runtime.RawExtension{Raw: result}
		resp := hook.Handle(context.Background(), again)
		if !resp.Allowed || len(resp.Patch) != 0 {
			t.Errorf("sent again after the patch: allowed %v, patch %s; want allowed and no patch", resp.Allowed, resp.Patch)
		}
	})
}

// TestFixturesPaired fails on a request without a golden file, a golden
// file left behind by a removed request, and a case the README does not
// list.
func TestFixturesPaired(t *testing.T) {
	fixtures().CheckPaired(t)
}
