package overcommit_test

import (
	"bytes"
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kubeharness/kubeharness/internal/admissiontest"
	"github.com/kubeharness/kubeharness/internal/scheme"
	"github.com/kubeharness/kubeharness/webhook/overcommit"
	"github.com/kubeharness/kubeharness/webhook/safequantity"
)

// FuzzWebhook posts arbitrary bodies to the overcommit webhook as the
// manager registers it, with the default ratios. Besides what every answer
// must be (see serve), it allows everything, as a denied heartbeat would
// take the Node down; it patches only Node status updates, and a patch
// yields exactly the Node Apply makes, keeping everything else the Node
// carried, fields this build does not know included. The result, sent
// again as an update of itself, is left alone.
func FuzzWebhook(f *testing.F) {
	addSeeds(f)
	s := scheme.New()
	cfg := overcommit.DefaultConfig()
	hook := admissiontest.Quiet(&admission.Webhook{Handler: overcommit.New(s, cfg)})
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
		if !resp.Allowed {
			t.Fatalf("denied: %+v", resp.Result)
		}
		if len(resp.Patch) == 0 {
			return
		}
		if req.Operation != admissionv1.Update || req.Resource.Resource != "nodes" || req.SubResource != "status" {
			t.Fatalf("patched a %s of %v/%s: %s", req.Operation, req.Resource, req.SubResource, resp.Patch)
		}
		node := &corev1.Node{}
		if err := decoder.DecodeRaw(req.Object, node); err != nil {
			t.Fatalf("patched a Node that does not decode: %v", err)
		}
		// The API server sends objects it encoded itself, never with
		// duplicate keys, on which JSON decoders disagree.
		if admissiontest.HasDuplicateKeys(req.Object.Raw) {
			return
		}
		var old *corev1.Node
		if len(req.OldObject.Raw) != 0 {
			old = &corev1.Node{}
			if err := decoder.DecodeRaw(req.OldObject, old); err != nil {
				t.Fatalf("patched despite a stored Node that does not decode: %v", err)
			}
		}
		want := node.DeepCopy()
		overcommit.Apply(want, old, req.UserInfo.Username, cfg)
		patched := admissiontest.ApplyPatch(t, req.Object.Raw, resp)
		got := &corev1.Node{}
		if err := decoder.DecodeRaw(runtime.RawExtension{Raw: patched}, got); err != nil {
			t.Fatalf("the patched Node %s does not decode: %v", patched, err)
		}
		if !equality.Semantic.DeepEqual(want, got) {
			t.Fatalf("patch %s turned the Node into %+v, want %+v", resp.Patch, got, want)
		}
		if lost := admissiontest.LostValues(t, req.Object.Raw, patched, nil); len(lost) > 0 {
			t.Fatalf("patch %s dropped %v from the Node", resp.Patch, lost)
		}
		again := *req
		again.Object, again.OldObject = runtime.RawExtension{Raw: patched}, runtime.RawExtension{Raw: patched}
		if _, resp := admissiontest.Serve(t, hook, admissiontest.ReviewJSON(t, &again)); !resp.Allowed || len(resp.Patch) != 0 {
			t.Fatalf("the overcommitted Node %s, sent again as an update of itself: allowed %v, patch %s; want allowed with no patch",
				patched, resp.Allowed, resp.Patch)
		}
	})
}

// FuzzApply overcommits one resource of an opted-in Node with arbitrary
// amounts, ratio annotations and flags, raw annotations, stored Nodes and
// users, and checks the result against the rule, computed exactly: the
// allocatable is the raw value times the ratio rounded down to a
// millicore or byte, the raw value is what the Node's own kubelet sets or
// else the recorded one, and anything unusable (a ratio that is not a
// positive number, a raw value that is no quantity, a result past int64 or
// rounding to nothing) leaves the allocatable as it is or at the raw
// value, with a warning. Applying again to the result changes nothing.
func FuzzApply(f *testing.F) {
	for _, s := range []struct {
		memory                             bool
		allocatable, ratio, raw, old       string
		cfgRatio                           float64
		fromNode, hasRatio, hasRaw, hasOld bool
	}{
		{false, "4", "", "", "", 2, true, false, false, false},
		{true, "8Gi", "1.15", "", "", 1, true, true, false, false},
		{false, "8", "", "4", "8", 2, true, false, true, true},
		{false, "8", "", "4", "6", 2, true, false, true, true},
		{true, "8Gi", "0.5", "8Gi", "", 1, false, true, true, false},
		{false, "3", "x", "", "", 2, true, true, false, false},
		{false, "3", "", "", "", math.NaN(), true, false, false, false},
		{true, "100", "1e-300", "", "", 1, true, true, false, false},
		{true, "8Ei", "1e300", "", "", 1, true, true, false, false},
		{false, "1", "", "not-a-quantity", "", 2, false, false, true, false},
		{false, "1", "", "-4", "", 2, false, false, true, false},
		{true, "7", "0x1p-2", "", "", 1, true, true, false, false},
		{false, "2", "", "1e-2147483647", "", 2, false, false, true, false},
		{false, "1m", "0.999", "", "", 1, true, true, false, false},
	} {
		f.Add(s.memory, s.allocatable, s.ratio, s.raw, s.old, s.cfgRatio, s.fromNode, s.hasRatio, s.hasRaw, s.hasOld)
	}
	f.Fuzz(func(t *testing.T, memory bool, allocatable, ratio, raw, stored string, cfgRatio float64, fromNode, hasRatio, hasRaw, hasOld bool) {
		name, ratioAnnotation, rawAnnotation := corev1.ResourceCPU, overcommit.CPURatioAnnotation, overcommit.RawCPUAnnotation
		cfg := overcommit.Config{CPURatio: cfgRatio, MemoryRatio: 1}
		if memory {
			name, ratioAnnotation, rawAnnotation = corev1.ResourceMemory, overcommit.MemoryRatioAnnotation, overcommit.RawMemoryAnnotation
			cfg = overcommit.Config{CPURatio: 1, MemoryRatio: cfgRatio}
		}
		// Allocatable amounts come from the API server, which re-encodes
		// them canonically; ParseQuantity can take minutes on forms it
		// never sends (see safequantity).
		if safequantity.Check(allocatable) != nil || safequantity.Check(stored) != nil {
			return
		}
		current, err := resource.ParseQuantity(allocatable)
		if err != nil || !tractable(current) {
			return
		}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name: "worker-1", Labels: map[string]string{overcommit.EnabledLabel: "true"}, Annotations: map[string]string{},
		}}
		node.Status.Allocatable = corev1.ResourceList{name: current}
		if hasRatio {
			node.Annotations[ratioAnnotation] = ratio
		}
		if hasRaw {
			node.Annotations[rawAnnotation] = raw
		}
		var old *corev1.Node
		if hasOld {
			old = &corev1.Node{}
			if q, err := resource.ParseQuantity(stored); err == nil {
				old.Status.Allocatable = corev1.ResourceList{name: q}
			}
		}
		user := "system:serviceaccount:kube-system:node-controller"
		if fromNode {
			user = "system:node:worker-1"
		}

		// The rule, computed here exactly.
		written := strconv.FormatFloat(cfgRatio, 'g', -1, 64)
		if hasRatio {
			written = ratio
		}
		r, ratioOK := exactRatio(written)
		wantWarning := !ratioOK
		want, wantRaw := current, ""
		var rawQ resource.Quantity
		usable := true
		switch {
		case fromNode && (!hasRaw || old != nil && !sameAmount(old.Status.Allocatable, name, current)):
			rawQ, wantRaw = current, current.String()
		case !hasRaw:
			usable = false
		default:
			q, err := safequantity.Parse(raw)
			if err != nil || q.Sign() < 0 {
				usable, wantWarning = false, true
			} else if !tractable(q) {
				return
			}
			rawQ = q
		}
		if usable {
			units := exact(rawQ)
			units.Mul(units, r)
			if name == corev1.ResourceCPU {
				units.Mul(units, big.NewRat(1000, 1))
			}
			n := new(big.Int).Quo(units.Num(), units.Denom())
			switch {
			case units.Sign() < 0, n.Cmp(big.NewInt(math.MaxInt64)) > 0, n.Sign() == 0 && units.Sign() > 0:
				want, wantWarning = rawQ, true
			case name == corev1.ResourceCPU:
				want = *resource.NewMilliQuantity(n.Int64(), resource.DecimalSI)
			default:
				want = *resource.NewQuantity(n.Int64(), resource.BinarySI)
			}
		}

		warnings := overcommit.Apply(node, old, user, cfg)
		got := node.Status.Allocatable[name]
		if got.Cmp(want) != 0 {
			t.Fatalf("allocatable %s, want %s (raw %s, ratio %s, warnings %q)", got.String(), want.String(), rawQ.String(), r.RatString(), warnings)
		}
		if wantRaw != "" && node.Annotations[rawAnnotation] != wantRaw {
			t.Fatalf("raw annotation %q, want %q", node.Annotations[rawAnnotation], wantRaw)
		}
		if recorded, ok := node.Annotations[rawAnnotation]; wantRaw == "" && (ok != hasRaw || hasRaw && recorded != raw) {
			t.Fatalf("raw annotation %q changed by an update that does not set it", recorded)
		}
		if (len(warnings) > 0) != wantWarning {
			t.Fatalf("warnings %q, want a warning: %v", warnings, wantWarning)
		}

		// The result, applied again as an update of itself, stays as it is.
		again := node.DeepCopy()
		overcommit.Apply(again, node, user, cfg)
		if !equality.Semantic.DeepEqual(node, again) {
			t.Fatalf("applied again, %+v became %+v", node, again)
		}
	})
}

// exactRatio is s as the exact decimal overcommit must use, and whether it
// is a positive number as strconv.ParseFloat reads them.
func exactRatio(s string) (*big.Rat, bool) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 {
		return big.NewRat(1, 1), false
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return big.NewRat(1, 1), false
	}
	return r, true
}

// tractable reports whether q is small enough in scale to compute with
// exactly here: amounts of more than 40 decimal digits either way are left
// to FuzzWebhook.
func tractable(q resource.Quantity) bool {
	d := q.AsDec()
	return d.Scale() >= -40 && d.Scale() <= 40 && d.UnscaledBig().BitLen() < 256
}

// exact is q as a fraction.
func exact(q resource.Quantity) *big.Rat {
	d := q.AsDec()
	r := new(big.Rat).SetInt(d.UnscaledBig())
	pow := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(d.Scale(), -d.Scale()))), nil))
	if d.Scale() > 0 {
		return r.Quo(r, pow)
	}
	return r.Mul(r, pow)
}

// sameAmount reports whether list holds amount for name.
func sameAmount(list corev1.ResourceList, name corev1.ResourceName, amount resource.Quantity) bool {
	q, ok := list[name]
	return ok && q.Cmp(amount) == 0
}

// addSeeds adds the overcommit admission fixtures and reviews for the
// cases they lack: dry runs, updates without the stored Node, other
// resources and subresources, a field this build does not know, a v1beta1
// review, a wrong kind, a missing object and huge fields.
func addSeeds(f *testing.F) {
	admissiontest.AddFixtures(f, "../../fixtures/admission/overcommit/*.request.yaml")
	review := func(op, resource, subResource, user, object, oldObject, extra string) []byte {
		s := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"0c0e0000-4444-4000-8000-000000000001",` +
			`"kind":{"group":"","version":"v1","kind":"Node"},"resource":{"group":"","version":"v1","resource":"` + resource + `"},` +
			`"subResource":"` + subResource + `","name":"worker-1","operation":"` + op + `","userInfo":{"username":"` + user + `"}` + extra
		if object != "" {
			s += `,"object":` + object
		}
		if oldObject != "" {
			s += `,"oldObject":` + oldObject
		}
		return []byte(s + `}}`)
	}
	node := func(annotations, allocatable string) string {
		return `{"apiVersion":"v1","kind":"Node","metadata":{"name":"worker-1","labels":{"overcommit.kubeharness.dev/enabled":"true"},` +
			`"annotations":` + annotations + `},"status":{"allocatable":` + allocatable + `,"futureField":{"x":1}}}`
	}
	const kubelet = "system:node:worker-1"
	fresh := node(`{"overcommit.kubeharness.dev/cpu-ratio":"1.5","overcommit.kubeharness.dev/memory-ratio":"0.75"}`, `{"cpu":"3500m","memory":"7Gi","pods":"110"}`)
	recorded := node(`{"overcommit.kubeharness.dev/raw-cpu":"4","overcommit.kubeharness.dev/raw-memory":"8Gi"}`, `{"cpu":"8","memory":"8Gi"}`)
	for _, body := range [][]byte{
		review("UPDATE", "nodes", "status", kubelet, fresh, "", `,"dryRun":true`),
		review("UPDATE", "nodes", "status", kubelet, fresh, recorded, ""),
		review("UPDATE", "nodes", "status", "system:serviceaccount:kube-system:node-controller", recorded, recorded, ""),
		review("UPDATE", "nodes", "status", kubelet, node(`null`, `{"cpu":"1e3","memory":"1e30"}`), "", ""),
		review("UPDATE", "nodes", "status", kubelet, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"worker-1","labels":{"overcommit.kubeharness.dev/enabled":"true"}},"status":{"allocatable":{"cpu":"4"}}}`, "", ""),
		review("UPDATE", "nodes", "status", kubelet, node(`{"overcommit.kubeharness.dev/cpu-ratio":"`+strings.Repeat("1", 1<<14)+`"}`, `{"cpu":"4"}`), "", ""),
		review("UPDATE", "nodes", "", kubelet, fresh, recorded, ""),
		review("UPDATE", "pods", "status", kubelet, fresh, recorded, ""),
		review("CREATE", "nodes", "", kubelet, fresh, "", ""),
		review("UPDATE", "nodes", "status", kubelet, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"worker-1"}}`, "", ""),
		review("UPDATE", "nodes", "status", kubelet, "", "", ""),
		review("UPDATE", "nodes", "status", kubelet, fresh, `{"kind":"Node","status":"broken"}`, ""),
		bytes.Replace(review("UPDATE", "nodes", "status", kubelet, fresh, "", ""), []byte("admission.k8s.io/v1"), []byte("admission.k8s.io/v1beta1"), 1),
		[]byte(`{"request":{"uid":"x","operation":"UPDATE","resource":{"version":"v1","resource":"nodes"},"subResource":"status","object":{}}}`),
		[]byte(`not json`),
		{},
	} {
		f.Add(body)
	}
}
