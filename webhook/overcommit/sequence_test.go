package overcommit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kubeharness/kubeharness/internal/admissiontest"
)

// TestNodeStatusWritesInSequence plays the API server for one Node through
// a series of status writes: each is sent to the webhook over HTTP as an
// AdmissionReview, with the stored Node as oldObject, and the Node the
// returned patch makes is stored for the next. Writers are the kubelet,
// which sets allocatable to its real value on every heartbeat;
// node-problem-detector, which patches only its conditions with the
// kubelet's credentials; and an admin.
func TestNodeStatusWritesInSequence(t *testing.T) {
	hook := &admission.Webhook{Handler: New(clientgoscheme.Scheme, DefaultConfig())}
	// Opted in a moment ago: no raw annotations, allocatable as the kubelet
	// reported it.
	template := fixtures().ReadRequest(t, "node-conditions-only-no-raw")
	stored := decodeNode(t, template.OldObject.Raw)

	at := time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC)
	// npd refreshes node-problem-detector's condition and nothing else.
	npd := func(n *corev1.Node) {
		at = at.Add(10 * time.Second)
		setCondition(n, corev1.NodeConditionType("KernelDeadlock"), at)
	}
	// kubelet reports allocatable and capacity cpu and memory and its Ready
	// heartbeat.
	kubelet := func(cpu, memory string) func(*corev1.Node) {
		return func(n *corev1.Node) {
			at = at.Add(10 * time.Second)
			for _, rl := range []corev1.ResourceList{n.Status.Allocatable, n.Status.Capacity} {
				rl[corev1.ResourceCPU] = resource.MustParse(cpu)
				rl[corev1.ResourceMemory] = resource.MustParse(memory)
			}
			setCondition(n, corev1.NodeReady, at)
		}
	}
	const (
		node  = "system:node:worker-1"
		admin = "kubernetes-admin"
	)
	steps := []struct {
		name, user  string
		write       func(*corev1.Node)
		cpu, rawCPU string
		memory      string
		// warning is a substring of the one warning expected, if any.
		warning string
	}{
		{name: "first write after opting in, conditions only", user: node, write: npd, cpu: "8", rawCPU: "4", memory: "8Gi"},
		{name: "conditions only again", user: node, write: npd, cpu: "8", rawCPU: "4", memory: "8Gi"},
		{name: "conditions only a third time", user: node, write: npd, cpu: "8", rawCPU: "4", memory: "8Gi"},
		{name: "conditions only a fourth time", user: node, write: npd, cpu: "8", rawCPU: "4", memory: "8Gi"},
		{name: "kubelet heartbeat with the same allocatable", user: node, write: kubelet("4", "8Gi"), cpu: "8", rawCPU: "4", memory: "8Gi"},
		{name: "kubelet reporting a new allocatable", user: node, write: kubelet("6", "8Gi"), cpu: "12", rawCPU: "6", memory: "8Gi"},
		{name: "conditions only after the new allocatable", user: node, write: npd, cpu: "12", rawCPU: "6", memory: "8Gi"},
		{name: "conditions only after the new allocatable again", user: node, write: npd, cpu: "12", rawCPU: "6", memory: "8Gi"},
		{name: "admin writing conditions", user: admin, write: npd, cpu: "12", rawCPU: "6", memory: "8Gi"},
		{name: "kubelet reporting cpu past int64 millicores", user: node, write: kubelet("9223372036854775807", "8Gi"),
			cpu: "9223372036854775807", rawCPU: "9223372036854775807", memory: "8Gi", warning: "cpu allocatable 9223372036854775807 times ratio 2 overflows"},
		{name: "conditions only with the huge raw value", user: node, write: npd,
			cpu: "9223372036854775807", rawCPU: "9223372036854775807", memory: "8Gi", warning: "cpu allocatable 9223372036854775807 times ratio 2 overflows"},
		{name: "admin writing conditions with the huge raw value", user: admin, write: npd,
			cpu: "9223372036854775807", rawCPU: "9223372036854775807", memory: "8Gi", warning: "cpu allocatable 9223372036854775807 times ratio 2 overflows"},
		{name: "kubelet reporting memory past int64 bytes", user: node, write: kubelet("4", "1e30"),
			cpu: "8", rawCPU: "4", memory: "1e30", warning: "memory allocatable 1e30 times ratio 1 overflows"},
		{name: "kubelet back to sane amounts", user: node, write: kubelet("4", "8Gi"), cpu: "8", rawCPU: "4", memory: "8Gi"},
		{name: "conditions only at the end", user: node, write: npd, cpu: "8", rawCPU: "4", memory: "8Gi"},
	}
	for i, step := range steps {
		sent := stored.DeepCopy()
		step.write(sent)
		req := template.AdmissionRequest
		req.UID = types.UID(fmt.Sprintf("0c0e0000-0000-4000-8000-1000000000%02d", i))
		req.UserInfo.Username = step.user
		req.Object = runtime.RawExtension{Raw: encodeNode(t, sent)}
		req.OldObject = runtime.RawExtension{Raw: encodeNode(t, stored)}
		resp := review(t, hook, req)
		if !resp.Allowed {
			t.Fatalf("step %d, %s: denied: %+v", i, step.name, resp.Result)
		}
		stored = decodeNode(t, admissiontest.ApplyPatch(t, req.Object.Raw, resp))

		cpu, memory := stored.Status.Allocatable[corev1.ResourceCPU], stored.Status.Allocatable[corev1.ResourceMemory]
		got := []string{cpu.String(), stored.Annotations[RawCPUAnnotation], memory.String(), stored.Annotations[RawMemoryAnnotation]}
		want := []string{step.cpu, step.rawCPU, step.memory, step.memory}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("step %d, %s: allocatable cpu, raw-cpu, allocatable memory, raw-memory = %q, want %q", i, step.name, got, want)
		}
		if cpu.Sign() <= 0 || memory.Sign() <= 0 {
			t.Errorf("step %d, %s: allocatable cpu %s, memory %s; want both positive", i, step.name, cpu.String(), memory.String())
		}
		switch {
		case step.warning == "" && len(resp.Warnings) != 0:
			t.Errorf("step %d, %s: warnings %q, want none", i, step.name, resp.Warnings)
		case step.warning != "" && (len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], step.warning)):
			t.Errorf("step %d, %s: warnings %q, want one containing %q", i, step.name, resp.Warnings, step.warning)
		}
	}
}

// review sends req to hook as the API server does, an AdmissionReview
// POSTed as JSON, and returns the response from the AdmissionReview it
// answers with.
func review(t *testing.T, hook http.Handler, req admissionv1.AdmissionRequest) admission.Response {
	t.Helper()
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  &req,
	})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, Path+"?timeout=2s", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	hook.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("HTTP %d: %s", w.Code, w.Body)
	}
	var answer admissionv1.AdmissionReview
	if err := json.Unmarshal(w.Body.Bytes(), &answer); err != nil {
		t.Fatalf("decoding the AdmissionReview answered: %v: %s", err, w.Body)
	}
	if answer.Response == nil || answer.Response.UID != req.UID {
		t.Fatalf("the AdmissionReview answered has no response for request %s: %s", req.UID, w.Body)
	}
	return admission.Response{AdmissionResponse: *answer.Response}
}

func decodeNode(t *testing.T, raw []byte) *corev1.Node {
	t.Helper()
	n := &corev1.Node{}
	if err := json.Unmarshal(raw, n); err != nil {
		t.Fatal(err)
	}
	return n
}

func encodeNode(t *testing.T, n *corev1.Node) []byte {
	t.Helper()
	data, err := json.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// setCondition refreshes the heartbeat of n's condition of type typ, adding
// the condition if n has none.
func setCondition(n *corev1.Node, typ corev1.NodeConditionType, at time.Time) {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == typ {
			n.Status.Conditions[i].LastHeartbeatTime = metav1.NewTime(at)
			return
		}
	}
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{
		Type: typ, Status: corev1.ConditionFalse, LastHeartbeatTime: metav1.NewTime(at), LastTransitionTime: metav1.NewTime(at),
	})
}
