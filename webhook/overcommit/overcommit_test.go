package overcommit

import (
	"context"
	"flag"
	"io"
	"maps"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

const kubelet = "system:node:worker-1"

// node is an opted-in worker-1 with a copy of annotations and allocatable
// given as key, value pairs.
func node(annotations map[string]string, allocatable ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        "worker-1",
		Labels:      map[string]string{EnabledLabel: "true"},
		Annotations: maps.Clone(annotations),
	}}
	n.Status.Allocatable = corev1.ResourceList{}
	for i := 0; i < len(allocatable); i += 2 {
		n.Status.Allocatable[corev1.ResourceName(allocatable[i])] = resource.MustParse(allocatable[i+1])
	}
	return n
}

func withLabels(n *corev1.Node, labels map[string]string) *corev1.Node {
	n.Labels = labels
	return n
}

func TestApply(t *testing.T) {
	raw := map[string]string{RawCPUAnnotation: "4", RawMemoryAnnotation: "8Gi"}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	cases := []struct {
		name         string
		in           *corev1.Node
		old          *corev1.Node
		username     string
		cfg          Config
		want         *corev1.Node
		wantWarnings []string
	}{
		{
			name:     "kubelet, default ratios",
			in:       node(nil, "cpu", "4", "memory", "8Gi", "pods", "110", "ephemeral-storage", "56403987978"),
			username: kubelet,
			want:     node(raw, "cpu", "8", "memory", "8Gi", "pods", "110", "ephemeral-storage", "56403987978"),
		},
		{
			name:     "kubelet, annotation ratios",
			in:       node(map[string]string{CPURatioAnnotation: "3", MemoryRatioAnnotation: "1.5"}, "cpu", "4", "memory", "8Gi"),
			username: kubelet,
			want:     node(with(raw, CPURatioAnnotation, "3", MemoryRatioAnnotation, "1.5"), "cpu", "12", "memory", "12Gi"),
		},
		{
			name:     "kubelet replaces a stale raw value",
			in:       node(with(raw, RawCPUAnnotation, "3"), "cpu", "4", "memory", "8Gi"),
			old:      node(with(raw, RawCPUAnnotation, "3"), "cpu", "6", "memory", "8Gi"),
			username: kubelet,
			want:     node(raw, "cpu", "8", "memory", "8Gi"),
		},
		{
			name:     "kubelet setting a new allocatable records it as raw",
			in:       node(raw, "cpu", "6", "memory", "8Gi"),
			old:      node(raw, "cpu", "8", "memory", "8Gi"),
			username: kubelet,
			want:     node(with(raw, RawCPUAnnotation, "6"), "cpu", "12", "memory", "8Gi"),
		},
		{
			name:     "kubelet setting a resource the stored node lacks",
			in:       node(raw, "cpu", "6", "memory", "8Gi"),
			old:      node(raw, "memory", "8Gi"),
			username: kubelet,
			want:     node(with(raw, RawCPUAnnotation, "6"), "cpu", "12", "memory", "8Gi"),
		},
		{
			// A conditions-only patch sent with the kubelet's credentials,
			// as node-problem-detector sends: the stored, overcommitted
			// allocatable comes along unchanged.
			name:     "node update leaving allocatable as stored recomputes from raw",
			in:       node(raw, "cpu", "8", "memory", "8Gi"),
			old:      node(raw, "cpu", "8", "memory", "8Gi"),
			username: kubelet,
			want:     node(raw, "cpu", "8", "memory", "8Gi"),
		},
		{
			name:     "node update leaving allocatable as stored after a ratio change",
			in:       node(with(raw, CPURatioAnnotation, "3"), "cpu", "8", "memory", "8Gi"),
			old:      node(with(raw, CPURatioAnnotation, "3"), "cpu", "8", "memory", "8Gi"),
			username: kubelet,
			want:     node(with(raw, CPURatioAnnotation, "3"), "cpu", "12", "memory", "8Gi"),
		},
		{
			name:     "node update without the stored node recomputes from raw",
			in:       node(raw, "cpu", "8", "memory", "8Gi"),
			username: kubelet,
			want:     node(raw, "cpu", "8", "memory", "8Gi"),
		},
		{
			name:     "first node update after opting in leaves allocatable as stored",
			in:       node(nil, "cpu", "4", "memory", "8Gi"),
			old:      node(nil, "cpu", "4", "memory", "8Gi"),
			username: kubelet,
			want:     node(raw, "cpu", "8", "memory", "8Gi"),
		},
		{
			name:     "node update leaving allocatable as stored with a bad raw value",
			in:       node(with(raw, RawCPUAnnotation, "lots"), "cpu", "8", "memory", "8Gi"),
			old:      node(with(raw, RawCPUAnnotation, "lots"), "cpu", "8", "memory", "8Gi"),
			username: kubelet,
			want:     node(with(raw, RawCPUAnnotation, "lots"), "cpu", "8", "memory", "8Gi"),
			wantWarnings: []string{
				`annotation overcommit.kubeharness.dev/raw-cpu="lots" is not a quantity such as 4 or 8Gi; cpu allocatable of node worker-1 left as it is`,
			},
		},
		{
			name:     "kubelet setting allocatable replaces a bad raw value",
			in:       node(with(raw, RawCPUAnnotation, "lots"), "cpu", "4", "memory", "8Gi"),
			old:      node(with(raw, RawCPUAnnotation, "lots"), "cpu", "8", "memory", "8Gi"),
			username: kubelet,
			want:     node(raw, "cpu", "8", "memory", "8Gi"),
		},
		{
			name:     "kubelet without memory in allocatable",
			in:       node(nil, "cpu", "4"),
			username: kubelet,
			want:     node(map[string]string{RawCPUAnnotation: "4"}, "cpu", "8"),
		},
		{
			name:     "not opted in",
			in:       withLabels(node(nil, "cpu", "4"), nil),
			username: kubelet,
			want:     withLabels(node(nil, "cpu", "4"), nil),
		},
		{
			name:     "opted out with false",
			in:       withLabels(node(nil, "cpu", "4"), map[string]string{EnabledLabel: "false"}),
			username: kubelet,
			want:     withLabels(node(nil, "cpu", "4"), map[string]string{EnabledLabel: "false"}),
		},
		{
			name:     "other user recomputes from raw, not from allocatable",
			in:       node(raw, "cpu", "8", "memory", "8Gi"),
			username: "system:serviceaccount:kube-system:node-controller",
			want:     node(raw, "cpu", "8", "memory", "8Gi"),
		},
		{
			name:     "other user with a drifted allocatable",
			in:       node(raw, "cpu", "100", "memory", "1Gi"),
			username: "kubernetes-admin",
			want:     node(raw, "cpu", "8", "memory", "8Gi"),
		},
		{
			name:     "other user without raw",
			in:       node(nil, "cpu", "8", "memory", "8Gi"),
			username: "kubernetes-admin",
			want:     node(nil, "cpu", "8", "memory", "8Gi"),
		},
		{
			name:     "another node's kubelet is another user",
			in:       node(nil, "cpu", "8"),
			username: "system:node:worker-2",
			want:     node(nil, "cpu", "8"),
		},
		{
			name:     "other user with a bad raw value",
			in:       node(map[string]string{RawCPUAnnotation: "lots", RawMemoryAnnotation: "-8Gi"}, "cpu", "8", "memory", "8Gi"),
			username: "kubernetes-admin",
			want:     node(map[string]string{RawCPUAnnotation: "lots", RawMemoryAnnotation: "-8Gi"}, "cpu", "8", "memory", "8Gi"),
			wantWarnings: []string{
				`annotation overcommit.kubeharness.dev/raw-cpu="lots" is not a quantity such as 4 or 8Gi; cpu allocatable of node worker-1 left as it is`,
				`annotation overcommit.kubeharness.dev/raw-memory="-8Gi" is not a quantity such as 4 or 8Gi; memory allocatable of node worker-1 left as it is`,
			},
		},
		{
			name:     "cpu ratio abc",
			in:       node(map[string]string{CPURatioAnnotation: "abc"}, "cpu", "4", "memory", "8Gi"),
			username: kubelet,
			want:     node(with(raw, CPURatioAnnotation, "abc"), "cpu", "4", "memory", "8Gi"),
			wantWarnings: []string{
				`annotation overcommit.kubeharness.dev/cpu-ratio="abc" is not a positive number; cpu overcommit is off for node worker-1`,
			},
		},
		{
			name:     "memory ratio -1",
			in:       node(map[string]string{MemoryRatioAnnotation: "-1"}, "cpu", "4", "memory", "8Gi"),
			username: kubelet,
			want:     node(with(raw, MemoryRatioAnnotation, "-1"), "cpu", "8", "memory", "8Gi"),
			wantWarnings: []string{
				`annotation overcommit.kubeharness.dev/memory-ratio="-1" is not a positive number; memory overcommit is off for node worker-1`,
			},
		},
		{
			name:     "a bad ratio undoes an earlier overcommit",
			in:       node(with(raw, CPURatioAnnotation, "0"), "cpu", "8", "memory", "8Gi"),
			username: "kubernetes-admin",
			want:     node(with(raw, CPURatioAnnotation, "0"), "cpu", "4", "memory", "8Gi"),
			wantWarnings: []string{
				`annotation overcommit.kubeharness.dev/cpu-ratio="0" is not a positive number; cpu overcommit is off for node worker-1`,
			},
		},
		{
			name:     "bad configured ratio",
			in:       node(nil, "cpu", "4", "memory", "8Gi"),
			username: kubelet,
			cfg:      Config{CPURatio: math.NaN(), MemoryRatio: 0},
			want:     node(raw, "cpu", "4", "memory", "8Gi"),
			wantWarnings: []string{
				"the configured cpu ratio NaN is not a positive number; cpu overcommit is off for node worker-1",
				"the configured memory ratio 0 is not a positive number; memory overcommit is off for node worker-1",
			},
		},
		{
			name:     "ratio overflows",
			in:       node(map[string]string{CPURatioAnnotation: "1e30"}, "cpu", "4"),
			username: kubelet,
			want:     node(map[string]string{CPURatioAnnotation: "1e30", RawCPUAnnotation: "4"}, "cpu", "4"),
			wantWarnings: []string{
				"cpu allocatable 4 times ratio 1e+30 overflows; cpu overcommit is off for node worker-1",
			},
		},
		{
			name:     "rounded down",
			in:       node(map[string]string{CPURatioAnnotation: "1.5", MemoryRatioAnnotation: "1.5"}, "cpu", "3999m", "memory", "1001"),
			username: kubelet,
			want: node(map[string]string{CPURatioAnnotation: "1.5", MemoryRatioAnnotation: "1.5", RawCPUAnnotation: "3999m", RawMemoryAnnotation: "1001"},
				"cpu", "5998m", "memory", "1501"),
		},
		{
			name:     "rounded down to a millicore",
			in:       node(map[string]string{CPURatioAnnotation: "0.5"}, "cpu", "3m"),
			username: kubelet,
			want:     node(map[string]string{CPURatioAnnotation: "0.5", RawCPUAnnotation: "3m"}, "cpu", "1m"),
		},
		{
			// A positive raw value never becomes no allocatable at all.
			name:     "below a millicore",
			in:       node(map[string]string{CPURatioAnnotation: "0.5"}, "cpu", "1m"),
			username: kubelet,
			want:     node(map[string]string{CPURatioAnnotation: "0.5", RawCPUAnnotation: "1m"}, "cpu", "1m"),
			wantWarnings: []string{
				"cpu allocatable 1m times ratio 0.5 rounds down to 0; cpu overcommit is off for node worker-1",
			},
		},
		{
			name:     "zero stays zero",
			in:       node(nil, "cpu", "0", "memory", "0"),
			username: kubelet,
			want:     node(map[string]string{RawCPUAnnotation: "0", RawMemoryAnnotation: "0"}, "cpu", "0", "memory", "0"),
		},
		{
			name:     "the most cpu that fits",
			in:       node(nil, "cpu", "4611686018427387903m"),
			username: kubelet,
			want:     node(map[string]string{RawCPUAnnotation: "4611686018427387903m"}, "cpu", "9223372036854775806m"),
		},
		{
			name:     "a millicore more than fits",
			in:       node(nil, "cpu", "4611686018427387904m"),
			username: kubelet,
			want:     node(map[string]string{RawCPUAnnotation: "4611686018427387904m"}, "cpu", "4611686018427387904m"),
			wantWarnings: []string{
				"cpu allocatable 4611686018427387904m times ratio 2 overflows; cpu overcommit is off for node worker-1",
			},
		},
		{
			// In millicores the raw value itself is past int64:
			// MilliValue would wrap around to -1000.
			name:     "huge raw cpu from the kubelet",
			in:       node(nil, "cpu", "9223372036854775807", "memory", "8Gi"),
			username: kubelet,
			want:     node(with(raw, RawCPUAnnotation, "9223372036854775807"), "cpu", "9223372036854775807", "memory", "8Gi"),
			wantWarnings: []string{
				"cpu allocatable 9223372036854775807 times ratio 2 overflows; cpu overcommit is off for node worker-1",
			},
		},
		{
			name:     "raw cpu of 1e30 cores with a ratio below 1",
			in:       node(map[string]string{CPURatioAnnotation: "0.5"}, "cpu", "1e30"),
			username: kubelet,
			want:     node(map[string]string{CPURatioAnnotation: "0.5", RawCPUAnnotation: "1e30"}, "cpu", "1e30"),
			wantWarnings: []string{
				"cpu allocatable 1e30 times ratio 0.5 overflows; cpu overcommit is off for node worker-1",
			},
		},
		{
			name:     "huge raw memory with ratio 1",
			in:       node(nil, "cpu", "4", "memory", "1e30"),
			username: kubelet,
			want:     node(with(raw, RawMemoryAnnotation, "1e30"), "cpu", "8", "memory", "1e30"),
			wantWarnings: []string{
				"memory allocatable 1e30 times ratio 1 overflows; memory overcommit is off for node worker-1",
			},
		},
		{
			name:     "an amount too large to compute exactly",
			in:       node(map[string]string{CPURatioAnnotation: "1e-300"}, "cpu", "1e99999999"),
			username: kubelet,
			want:     node(map[string]string{CPURatioAnnotation: "1e-300", RawCPUAnnotation: "1e99999999"}, "cpu", "1e99999999"),
			wantWarnings: []string{
				"cpu allocatable 1e99999999 times ratio 1e-300 overflows; cpu overcommit is off for node worker-1",
			},
		},
		{
			name:     "other user with a huge raw value",
			in:       node(with(raw, RawCPUAnnotation, "9223372036854775807"), "cpu", "9223372036854775807", "memory", "8Gi"),
			old:      node(with(raw, RawCPUAnnotation, "9223372036854775807"), "cpu", "9223372036854775807", "memory", "8Gi"),
			username: "kubernetes-admin",
			want:     node(with(raw, RawCPUAnnotation, "9223372036854775807"), "cpu", "9223372036854775807", "memory", "8Gi"),
			wantWarnings: []string{
				"cpu allocatable 9223372036854775807 times ratio 2 overflows; cpu overcommit is off for node worker-1",
			},
		},
		{
			name:     "negative allocatable from the kubelet",
			in:       node(nil, "cpu", "-4"),
			username: kubelet,
			want:     node(map[string]string{RawCPUAnnotation: "-4"}, "cpu", "-4"),
			wantWarnings: []string{
				"cpu allocatable -4 times ratio 2 is negative; cpu overcommit is off for node worker-1",
			},
		},
		{
			// 1.15 as a float64 is just below 1.15: 100 times it would
			// round down to 114.
			name:     "decimal ratios are exact",
			in:       node(map[string]string{MemoryRatioAnnotation: "1.15"}, "cpu", "100", "memory", "100"),
			username: kubelet,
			cfg:      Config{CPURatio: 1.15, MemoryRatio: 1},
			want:     node(map[string]string{MemoryRatioAnnotation: "1.15", RawCPUAnnotation: "100", RawMemoryAnnotation: "100"}, "cpu", "115", "memory", "115"),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			if cfg == (Config{}) {
				cfg = DefaultConfig()
			}
			warnings := Apply(tc.in, tc.old, tc.username, cfg)
			if diff := cmp.Diff(tc.wantWarnings, warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, tc.in); diff != "" {
				t.Errorf("Node (-want +got):\n%s", diff)
			}
		})
	}
}

func TestApplyKeepsTheFormatOfAnUnchangedAmount(t *testing.T) {
	n := node(nil, "cpu", "4000m", "memory", "8G")
	Apply(n, nil, kubelet, Config{CPURatio: 1, MemoryRatio: 1})
	for name, want := range map[corev1.ResourceName]string{"cpu": "4", "memory": "8G"} {
		if got := n.Status.Allocatable[name]; got.String() != want {
			t.Errorf("%s = %s, want %s", name, got.String(), want)
		}
	}
}

func TestHandle(t *testing.T) {
	o := New(clientgoscheme.Scheme, DefaultConfig())
	status := admissionv1.AdmissionRequest{
		Operation:   admissionv1.Update,
		Resource:    metav1.GroupVersionResource{Version: "v1", Resource: "nodes"},
		SubResource: "status",
		UserInfo:    authUser(kubelet),
	}
	cases := []struct {
		name         string
		mutate       func(*admissionv1.AdmissionRequest)
		wantPatched  bool
		wantWarnings []string
		wantMessage  string
	}{
		{
			name: "heartbeat",
			mutate: func(r *admissionv1.AdmissionRequest) {
				r.Object.Raw = []byte(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"worker-1","labels":{"` + EnabledLabel + `":"true"}},"status":{"allocatable":{"cpu":"4"}}}`)
			},
			wantPatched: true,
		},
		{
			name: "bad ratio",
			mutate: func(r *admissionv1.AdmissionRequest) {
				r.Object.Raw = []byte(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"worker-1","labels":{"` + EnabledLabel + `":"true"},"annotations":{"` + CPURatioAnnotation + `":"x"}},"status":{"allocatable":{"cpu":"4"}}}`)
			},
			wantPatched:  true,
			wantWarnings: []string{`annotation overcommit.kubeharness.dev/cpu-ratio="x" is not a positive number; cpu overcommit is off for node worker-1`},
		},
		{
			name:         "no object",
			mutate:       func(*admissionv1.AdmissionRequest) {},
			wantWarnings: []string{"kubeharness overcommit webhook: decoding the Node: there is no content to decode; allocatable left as reported"},
		},
		{
			name: "not a Node",
			mutate: func(r *admissionv1.AdmissionRequest) {
				r.Object.Raw = []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"worker-1"}}`)
			},
			wantWarnings: []string{"kubeharness overcommit webhook: decoding the Node: "},
		},
		{
			name:        "node update",
			mutate:      func(r *admissionv1.AdmissionRequest) { r.SubResource = "" },
			wantMessage: "not overcommitted: only updates of nodes/status are",
		},
		{
			name:        "create",
			mutate:      func(r *admissionv1.AdmissionRequest) { r.Operation = admissionv1.Create },
			wantMessage: "not overcommitted: only updates of nodes/status are",
		},
		{
			name:        "pod status",
			mutate:      func(r *admissionv1.AdmissionRequest) { r.Resource.Resource = "pods" },
			wantMessage: "not overcommitted: only updates of nodes/status are",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := status
			tc.mutate(&req)
			resp := o.Handle(context.Background(), admission.Request{AdmissionRequest: req})
			if !resp.Allowed {
				t.Fatalf("denied: %+v", resp.Result)
			}
			if got := len(resp.Patch) != 0; got != tc.wantPatched {
				t.Errorf("patched = %v, want %v: %s", got, tc.wantPatched, resp.Patch)
			}
			if len(resp.Warnings) != len(tc.wantWarnings) {
				t.Fatalf("warnings %q, want %q", resp.Warnings, tc.wantWarnings)
			}
			for i, w := range tc.wantWarnings {
				if !strings.HasPrefix(resp.Warnings[i], w) {
					t.Errorf("warning %q, want one starting %q", resp.Warnings[i], w)
				}
			}
			if tc.wantMessage != "" && (resp.Result == nil || resp.Result.Message != tc.wantMessage) {
				t.Errorf("result %+v, want message %q", resp.Result, tc.wantMessage)
			}
		})
	}
}

func authUser(name string) authenticationv1.UserInfo {
	return authenticationv1.UserInfo{Username: name, Groups: []string{"system:nodes", "system:authenticated"}}
}

func TestConfig(t *testing.T) {
	parse := func(args ...string) (Config, error) {
		var c Config
		fs := flag.NewFlagSet("manager", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		c.BindFlags(fs)
		if err := fs.Parse(args); err != nil {
			return c, err
		}
		return c, c.Validate()
	}
	cases := []struct {
		args    []string
		want    Config
		wantErr string
	}{
		{want: DefaultConfig()},
		{args: []string{"--overcommit-cpu-ratio=4", "--overcommit-memory-ratio=1.25"}, want: Config{CPURatio: 4, MemoryRatio: 1.25}},
		{args: []string{"--overcommit-cpu-ratio=0.5"}, want: Config{CPURatio: 0.5, MemoryRatio: 1}},
		{args: []string{"--overcommit-cpu-ratio=0"}, wantErr: `--overcommit-cpu-ratio: "0" is not a positive number`},
		{args: []string{"--overcommit-memory-ratio=-1"}, wantErr: `--overcommit-memory-ratio: "-1" is not a positive number`},
		{args: []string{"--overcommit-cpu-ratio=NaN", "--overcommit-memory-ratio=+Inf"},
			wantErr: "--overcommit-cpu-ratio: \"NaN\" is not a positive number\n--overcommit-memory-ratio: \"+Inf\" is not a positive number"},
		{args: []string{"--overcommit-cpu-ratio=two"}, wantErr: `invalid value "two" for flag -overcommit-cpu-ratio`},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			got, err := parse(tc.args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Config (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHandleAllowsDespitePanic(t *testing.T) {
	// Without a decoder, decoding panics.
	resp := (&Overcommitter{Config: DefaultConfig()}).Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation:   admissionv1.Update,
		Resource:    metav1.GroupVersionResource{Version: "v1", Resource: "nodes"},
		SubResource: "status",
	}})
	if !resp.Allowed || len(resp.Warnings) != 1 || !strings.HasPrefix(resp.Warnings[0], "kubeharness overcommit webhook: panic: ") {
		t.Errorf("allowed %v, warnings %q; want allowed with a warning about the panic", resp.Allowed, resp.Warnings)
	}
}

// TestHandlePatchesOnlyWhatItChanges: the patch sets the allocatable and
// annotations Apply changed and nothing else, so a field this build's Node
// type does not know (one of a newer API server) is kept, and a quantity
// keeps the form it was sent in.
func TestHandlePatchesOnlyWhatItChanges(t *testing.T) {
	o := New(clientgoscheme.Scheme, DefaultConfig())
	raw := `{"apiVersion":"v1","kind":"Node","metadata":{"name":"worker-1","labels":{"` + EnabledLabel + `":"true"},"futureMeta":"kept"},` +
		`"status":{"allocatable":{"cpu":"4","memory":"8192Mi"},"capacity":{"cpu":"4000m"},"futureField":{"x":1}}}`
	resp := o.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Update, Resource: metav1.GroupVersionResource{Version: "v1", Resource: "nodes"},
		SubResource: "status", UserInfo: authUser(kubelet), Object: runtime.RawExtension{Raw: []byte(raw)},
	}})
	want := `[{"op":"replace","path":"/status/allocatable/cpu","value":"8"},` +
		`{"op":"add","path":"/metadata/annotations","value":{"overcommit.kubeharness.dev/raw-cpu":"4","overcommit.kubeharness.dev/raw-memory":"8Gi"}}]`
	if !resp.Allowed || string(resp.Patch) != want {
		t.Fatalf("allowed %v, patch %s; want %s", resp.Allowed, resp.Patch, want)
	}
}

// TestHandleRefusesCostlyRawAnnotation: whoever may annotate the Node writes
// the raw annotations, and resource.ParseQuantity spends minutes on
// quantities such as 1e-2147483647; such a value is warned about at once.
func TestHandleRefusesCostlyRawAnnotation(t *testing.T) {
	o := New(clientgoscheme.Scheme, DefaultConfig())
	raw := `{"apiVersion":"v1","kind":"Node","metadata":{"name":"worker-1","labels":{"` + EnabledLabel + `":"true"},` +
		`"annotations":{"` + RawCPUAnnotation + `":"1e-2147483647"}},"status":{"allocatable":{"cpu":"8"}}}`
	done := make(chan admission.Response, 1)
	go func() {
		done <- o.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Update, Resource: metav1.GroupVersionResource{Version: "v1", Resource: "nodes"},
			SubResource: "status", UserInfo: authUser("admin"), Object: runtime.RawExtension{Raw: []byte(raw)},
		}})
	}()
	select {
	case resp := <-done:
		if !resp.Allowed || len(resp.Patch) != 0 || len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], RawCPUAnnotation) {
			t.Fatalf("allowed %v, patch %s, warnings %q; want allowed unchanged with a warning about %s", resp.Allowed, resp.Patch, resp.Warnings, RawCPUAnnotation)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("no answer within 2s, the webhook's timeout")
	}
}
