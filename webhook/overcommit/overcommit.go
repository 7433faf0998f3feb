package overcommit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kubeharness/kubeharness/webhook/internal/patch"
	"github.com/kubeharness/kubeharness/webhook/safequantity"
)

// Path the webhook is served on; config/webhook is generated from the marker
// below and must name the same path.
const Path = "/mutate-v1-node-status-overcommit"

const (
	// EnabledLabel=true opts a Node in; the webhook configuration's
	// objectSelector matches it too.
	EnabledLabel = "overcommit.kubeharness.dev/enabled"
	// CPURatioAnnotation and MemoryRatioAnnotation override the Config
	// ratios for one Node.
	CPURatioAnnotation    = "overcommit.kubeharness.dev/cpu-ratio"
	MemoryRatioAnnotation = "overcommit.kubeharness.dev/memory-ratio"
	// RawCPUAnnotation and RawMemoryAnnotation keep the allocatable the
	// kubelet last reported, before overcommit.
	RawCPUAnnotation    = "overcommit.kubeharness.dev/raw-cpu"
	RawMemoryAnnotation = "overcommit.kubeharness.dev/raw-memory"
)

// +kubebuilder:webhook:path=/mutate-v1-node-status-overcommit,mutating=true,failurePolicy=ignore,sideEffects=None,groups="",resources=nodes/status,verbs=update,versions=v1,name=overcommit.kubeharness.dev,admissionReviewVersions=v1,timeoutSeconds=2

// Overcommitter is the admission handler overcommitting Node status updates.
type Overcommitter struct {
	Config Config

	decoder admission.Decoder
}

var _ admission.Handler = &Overcommitter{}

// New returns an Overcommitter decoding Nodes with scheme.
func New(scheme *runtime.Scheme, cfg Config) *Overcommitter {
	return &Overcommitter{Config: cfg, decoder: admission.NewDecoder(scheme)}
}

// SetupWebhookWithManager registers the overcommitter on the manager's
// webhook server. cfg is validated by the caller (manager.Options.Validate).
func SetupWebhookWithManager(mgr ctrl.Manager, cfg Config) error {
	mgr.GetWebhookServer().Register(Path, &admission.Webhook{Handler: New(mgr.GetScheme(), cfg)})
	return nil
}

var nodesResource = metav1.GroupVersionResource{Version: "v1", Resource: "nodes"}

// Handle overcommits a Node status update. It allows every request, failing
// ones included: failurePolicy=ignore covers a webhook that cannot be
// reached, not one that answers with a denial, and a denied heartbeat would
// have the Node marked NotReady.
func (o *Overcommitter) Handle(_ context.Context, req admission.Request) (resp admission.Response) {
	defer func() {
		// admission.Webhook would turn a panic into a denial.
		if r := recover(); r != nil {
			resp = allowedDespite(fmt.Errorf("panic: %v", r))
		}
	}()
	if req.Operation != admissionv1.Update || req.Resource != nodesResource || req.SubResource != "status" {
		return admission.Allowed("not overcommitted: only updates of nodes/status are")
	}
	node := &corev1.Node{}
	if err := o.decoder.Decode(req, node); err != nil {
		return allowedDespite(fmt.Errorf("decoding the Node: %w", err))
	}
	// The API server sends the stored Node with every UPDATE; without it,
	// Apply takes no allocatable as set by this update.
	var old *corev1.Node
	if len(req.OldObject.Raw) != 0 {
		old = &corev1.Node{}
		if err := o.decoder.DecodeRaw(req.OldObject, old); err != nil {
			return allowedDespite(fmt.Errorf("decoding the stored Node: %w", err))
		}
	}
	before := node.DeepCopy()
	warnings := Apply(node, old, req.UserInfo.Username, o.Config)
	patch, err := overcommitPatch(req.Object.Raw, before, node)
	if err != nil {
		return allowedDespite(fmt.Errorf("computing the patch: %w", err)).WithWarnings(warnings...)
	}
	if patch == nil {
		return admission.Allowed("").WithWarnings(warnings...)
	}
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{
		Allowed: true, Patch: patch, PatchType: ptr.To(admissionv1.PatchTypeJSONPatch),
	}}.WithWarnings(warnings...)
}

// overcommitPatch is the JSON Patch making raw, the Node as the API server
// sent it and decoded as before, into after: it sets the allocatable
// amounts and annotations Apply changed, and touches nothing else (nil when
// Apply changed nothing). A diff of raw against after re-encoded would also
// remove every field this build's Node type does not know, such as the
// fields of a newer API server's kubelets.
func overcommitPatch(raw []byte, before, after *corev1.Node) ([]byte, error) {
	obj, err := patch.Members(raw)
	if err != nil || obj == nil {
		return nil, errors.New("the object is not a JSON object")
	}
	var ops []patch.Op
	for _, r := range overcommitted {
		if q := after.Status.Allocatable[r.name]; q.Cmp(before.Status.Allocatable[r.name]) != 0 {
			ops = append(ops, patch.Replace("/status/allocatable/"+patch.EscapePointer(string(r.name)), q))
		}
	}
	added := map[string]string{}
	for k, v := range after.Annotations {
		if was, ok := before.Annotations[k]; !ok || was != v {
			added[k] = v
		}
	}
	ops = append(ops, patch.AddAnnotations(obj, added)...)
	if len(ops) == 0 {
		return nil, nil
	}
	return json.Marshal(ops)
}

// allowedDespite allows a request unchanged and warns about err.
func allowedDespite(err error) admission.Response {
	return admission.Allowed("").WithWarnings(fmt.Sprintf("kubeharness overcommit webhook: %v; allocatable left as reported", err))
}

// nodeUserPrefix plus the Node's name is the user its kubelet authenticates
// as.
const nodeUserPrefix = "system:node:"

// overcommitted are the resources Apply scales, with where their ratio and
// raw value are kept.
var overcommitted = []struct {
	name                           corev1.ResourceName
	ratioAnnotation, rawAnnotation string
	ratio                          func(Config) float64
}{
	{corev1.ResourceCPU, CPURatioAnnotation, RawCPUAnnotation, func(c Config) float64 { return c.CPURatio }},
	{corev1.ResourceMemory, MemoryRatioAnnotation, RawMemoryAnnotation, func(c Config) float64 { return c.MemoryRatio }},
}

// Apply sets the allocatable CPU and memory of an opted-in node to its raw
// value times its ratio, and returns warnings about ratios and raw values it
// could not use. old is the stored Node the update replaces, nil if unknown;
// username is who sent node.
//
// Only the node's own kubelet reports the real allocatable, and a stored
// allocatable is overcommitted already, so only an update by username
// system:node:<name> that sets a resource's allocatable, to an amount other
// than old's, records a new raw value. Another update by the node, such as a
// conditions-only patch sent with its credentials, leaves the stored
// allocatable in place and is recomputed from the recorded raw value, as is
// any update by another user. With no raw value recorded yet, an update by
// the node records the allocatable it carries, which nobody has overcommitted
// yet; an update by another user is left alone. That way no update multiplies
// an allocatable that is overcommitted already.
//
// A result that does not fit in int64 millicores of CPU or bytes of memory,
// or that rounds down to nothing from a positive raw value, leaves the
// allocatable at the raw value with a warning.
func Apply(node, old *corev1.Node, username string, cfg Config) (warnings []string) {
	if node.Labels[EnabledLabel] != "true" {
		return nil
	}
	fromNode := username == nodeUserPrefix+node.Name
	for _, r := range overcommitted {
		current, ok := node.Status.Allocatable[r.name]
		if !ok {
			continue
		}
		ratio, warning := ratioFor(node, r.name, r.ratioAnnotation, r.ratio(cfg))
		if warning != "" {
			warnings = append(warnings, warning)
		}
		recorded, haveRaw := node.Annotations[r.rawAnnotation]
		var raw resource.Quantity
		switch {
		case fromNode && (!haveRaw || setsAllocatable(old, r.name, current)):
			raw = current
			setAnnotation(node, r.rawAnnotation, raw.String())
		case !haveRaw:
			continue
		default:
			// Anyone who may annotate the Node writes this; the kubelet's
			// amounts come re-encoded by the API server.
			q, err := safequantity.Parse(recorded)
			if err != nil || q.Sign() < 0 {
				warnings = append(warnings, fmt.Sprintf("annotation %s=%q is not a quantity such as 4 or 8Gi; %s allocatable of node %s left as it is",
					r.rawAnnotation, recorded, r.name, node.Name))
				continue
			}
			raw = q
		}
		want, problem := scale(r.name, raw, ratio)
		if problem != "" {
			f, _ := ratio.Float64()
			warnings = append(warnings, fmt.Sprintf("%s allocatable %s times ratio %g %s; %s overcommit is off for node %s",
				r.name, raw.String(), f, problem, r.name, node.Name))
			want = raw
		}
		// Only a different amount is written: the same one in another
		// format would only churn the Node.
		if want.Cmp(current) != 0 {
			node.Status.Allocatable[r.name] = want
		}
	}
	return warnings
}

// setsAllocatable reports whether an update leaving allocatable name at
// amount sets it: old, the stored Node, has another amount or none. The
// stored amount is the overcommitted one, so a kubelet reporting its real
// allocatable changes it, while a partial update carries it unchanged. Without
// old there is no telling, and the update is taken as not setting it.
func setsAllocatable(old *corev1.Node, name corev1.ResourceName, amount resource.Quantity) bool {
	if old == nil {
		return false
	}
	stored, ok := old.Status.Allocatable[name]
	return !ok || stored.Cmp(amount) != 0
}

// ratioFor is the node's ratio for resource name: its annotation, else def,
// and 1 with a warning if that is not a positive number.
func ratioFor(node *corev1.Node, name corev1.ResourceName, annotation string, def float64) (*big.Rat, string) {
	if s, ok := node.Annotations[annotation]; ok {
		r, err := parseRatio(s)
		if err != nil {
			return big.NewRat(1, 1), fmt.Sprintf("annotation %s=%q is not a positive number; %s overcommit is off for node %s",
				annotation, s, name, node.Name)
		}
		return r, ""
	}
	r, err := ratioOf(def)
	if err != nil {
		return big.NewRat(1, 1), fmt.Sprintf("the configured %s ratio %v is not a positive number; %s overcommit is off for node %s",
			name, def, name, node.Name)
	}
	return r, ""
}

// maxUnits is the most millicores of CPU or bytes of memory an allocatable
// may be overcommitted to: what fits the int64 that the API server, the
// scheduler and the kubelet read amounts into.
var maxUnits = big.NewInt(math.MaxInt64)

// scale is raw times ratio, rounded down: CPU in millicores, memory in
// bytes. It is computed exactly, whatever the size of raw, and if the result
// is negative, more than maxUnits, or nothing from a positive raw, scale
// returns what is wrong with it instead.
func scale(name corev1.ResourceName, raw resource.Quantity, ratio *big.Rat) (resource.Quantity, string) {
	// Value and MilliValue would wrap around for amounts past int64.
	r, ok := decimal(raw)
	if !ok {
		return resource.Quantity{}, "overflows"
	}
	exact := r.Mul(r, ratio)
	if name == corev1.ResourceCPU {
		exact.Mul(exact, big.NewRat(1000, 1))
	}
	// Quo truncates toward zero, which for non-negative amounts is rounding
	// down: never more than the ratio grants.
	n := new(big.Int).Quo(exact.Num(), exact.Denom())
	switch {
	case exact.Sign() < 0:
		return resource.Quantity{}, "is negative"
	case n.Cmp(maxUnits) > 0:
		return resource.Quantity{}, "overflows"
	case n.Sign() == 0 && exact.Sign() > 0:
		return resource.Quantity{}, "rounds down to 0"
	case name == corev1.ResourceCPU:
		return *resource.NewMilliQuantity(n.Int64(), resource.DecimalSI), ""
	default:
		return *resource.NewQuantity(n.Int64(), resource.BinarySI), ""
	}
}

// maxDigits bounds the amounts decimal converts: from 10^maxDigits on, no
// ratio (at least 5e-324, the least positive float64) brings an amount
// within maxUnits, and exact arithmetic on an amount such as 1e100000000
// would take the webhook far past its timeout.
const maxDigits = 400

// decimal is q as an exact fraction, or false if its magnitude is
// 10^maxDigits or more.
func decimal(q resource.Quantity) (*big.Rat, bool) {
	// AsDec converts q, a copy, in place; the copy's inf.Dec may be shared
	// with the caller's Quantity, so it is only read.
	d := q.AsDec()
	unscaled, exp := d.UnscaledBig(), -int64(d.Scale())
	// |unscaled| is at least 2^(BitLen-1), and 2^10 is more than 10^3.
	if bits := int64(unscaled.BitLen()); bits > 0 && (bits-1)*3/10+exp >= maxDigits {
		return nil, false
	}
	r := new(big.Rat).SetInt(unscaled)
	if exp == 0 {
		return r, true
	}
	pow := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(max(exp, -exp)), nil))
	if exp > 0 {
		return r.Mul(r, pow), true
	}
	return r.Quo(r, pow), true
}

func setAnnotation(node *corev1.Node, key, value string) {
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[key] = value
}
