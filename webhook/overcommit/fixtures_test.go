package overcommit

import (
	"context"
	"encoding/json"
	"flag"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kubeharness/kubeharness/internal/admissiontest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// fixtures is the overcommit fixture suite; call it inside a test, once the
// -update flag is parsed.
func fixtures() admissiontest.Suite {
	return admissiontest.Suite{
		Dir:        "../../fixtures/admission/overcommit",
		UpdateHint: "go test ./webhook/overcommit -update",
		Update:     *update,
	}
}

// TestFixtures sends every request fixture through the webhook as the API
// server would, with DefaultConfig, and compares the outcome with its golden
// file. Then it sends the resulting Node again, as the same user, and expects
// the same Node back. From anyone but the Node's own kubelet that must take
// no patch. The kubelet's next heartbeat instead carries its real
// allocatable again, so it goes with the first request's allocatable.
func TestFixtures(t *testing.T) {
	hook := &admission.Webhook{Handler: New(clientgoscheme.Scheme, DefaultConfig())}
	fixtures().Run(t, hook, func(t *testing.T, req admission.Request, result []byte) {
		fromKubelet := req.UserInfo.Username == "system:node:"+nodeName(t, req.Object.Raw)
		again := req
		again.OldObject = runtime.RawExtension{Raw: result}
		again.Object = runtime.RawExtension{Raw: result}
		if fromKubelet {
			again.Object.Raw = withAllocatableOf(t, result, req.Object.Raw)
		}
		resp := hook.Handle(context.Background(), again)
		if !resp.Allowed {
			t.Fatalf("sent again: denied: %+v", resp.Result)
		}
		if !fromKubelet && len(resp.Patch) != 0 {
			t.Errorf("sent again by %s: patch %s, want none", req.UserInfo.Username, resp.Patch)
		}
		if diff := cmp.Diff(decodeJSON(t, result), decodeJSON(t, admissiontest.ApplyPatch(t, again.Object.Raw, resp))); diff != "" {
			t.Errorf("sent again by %s, the Node came out different (-first +again):\n%s", req.UserInfo.Username, diff)
		}
	})
}

// TestRepeatedHeartbeatFixture checks that the golden files of the first
// and the next heartbeat of a Node agree, as they must for overcommit not to
// compound.
func TestRepeatedHeartbeatFixture(t *testing.T) {
	s := fixtures()
	if diff := cmp.Diff(s.ReadGolden(t, "heartbeat-default-ratios"), s.ReadGolden(t, "heartbeat-repeated"), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("first heartbeat (-) and next heartbeat (+) differ:\n%s", diff)
	}
}

// TestFixturesPaired fails on a request without a golden file, a golden
// file left behind by a removed request, and a case the README does not
// list.
func TestFixturesPaired(t *testing.T) {
	fixtures().CheckPaired(t)
}

func decodeJSON(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func nodeName(t *testing.T, raw []byte) string {
	t.Helper()
	metadata, _ := decodeJSON(t, raw)["metadata"].(map[string]any)
	name, _ := metadata["name"].(string)
	return name
}

// withAllocatableOf is node with the status.allocatable of reported.
func withAllocatableOf(t *testing.T, node, reported []byte) []byte {
	t.Helper()
	n, r := decodeJSON(t, node), decodeJSON(t, reported)
	n["status"].(map[string]any)["allocatable"] = r["status"].(map[string]any)["allocatable"]
	data, err := json.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
