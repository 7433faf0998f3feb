package overcommit

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
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
// webhook server.
func SetupWebhookWithManager(mgr ctrl.Manager, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("invalid overcommit configuration: %w", err)
	}
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
	warnings := Apply(node, req.UserInfo.Username, o.Config)
	mutated, err := json.Marshal(node)
	if err != nil {
		return allowedDespite(fmt.Errorf("encoding the overcommitted Node: %w", err)).WithWarnings(warnings...)
	}
	// The patch is taken against the raw request, which is what the API
	// server applies it to; a re-encoding of the decoded Node may differ.
	resp = admission.PatchResponseFromRaw(req.Object.Raw, mutated)
	if !resp.Allowed {
		return allowedDespite(fmt.Errorf("computing the patch: %s", resp.Result.Message)).WithWarnings(warnings...)
	}
	return resp.WithWarnings(warnings...)
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
// could not use. username is who sent node.
//
// Only the node's own kubelet reports the real allocatable, so only an update
// by username system:node:<name> records a new raw value; any other update is
// recomputed from the recorded one, and left alone without it. That way no
// update multiplies an allocatable that is overcommitted already.
func Apply(node *corev1.Node, username string, cfg Config) (warnings []string) {
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
		var raw resource.Quantity
		if fromNode {
			raw = current
			setAnnotation(node, r.rawAnnotation, raw.String())
		} else {
			s, ok := node.Annotations[r.rawAnnotation]
			if !ok {
				continue
			}
			q, err := resource.ParseQuantity(s)
			if err != nil || q.Sign() < 0 {
				warnings = append(warnings, fmt.Sprintf("annotation %s=%q is not a quantity such as 4 or 8Gi; %s allocatable of node %s left as it is",
					r.rawAnnotation, s, r.name, node.Name))
				continue
			}
			raw = q
		}
		want, ok := scale(r.name, raw, ratio)
		if !ok {
			f, _ := ratio.Float64()
			warnings = append(warnings, fmt.Sprintf("%s allocatable %s times ratio %g overflows; %s overcommit is off for node %s",
				r.name, raw.String(), f, r.name, node.Name))
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

// scale is raw times ratio, rounded down: CPU in millicores, memory in
// bytes. It reports false if the result does not fit a Quantity.
func scale(name corev1.ResourceName, raw resource.Quantity, ratio *big.Rat) (resource.Quantity, bool) {
	units := raw.Value()
	if name == corev1.ResourceCPU {
		units = raw.MilliValue()
	}
	n := new(big.Int).Mul(big.NewInt(units), ratio.Num())
	// Quo truncates toward zero, which for these non-negative amounts is
	// rounding down: never more than the ratio grants.
	n.Quo(n, ratio.Denom())
	if !n.IsInt64() {
		return resource.Quantity{}, false
	}
	if name == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(n.Int64(), resource.DecimalSI), true
	}
	return *resource.NewQuantity(n.Int64(), resource.BinarySI), true
}

func setAnnotation(node *corev1.Node, key, value string) {
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[key] = value
}
