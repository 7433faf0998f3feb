package faultenv

import (
	"context"
	"fmt"
	"net/url"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A write the API server refused was not made; one whose answer never came,
// or came as a server error, may have been: the workload must not call the
// object lost when it then goes.
func TestAdvanceTellsARefusalFromAnUnknownOutcome(t *testing.T) {
	gr := schema.GroupResource{Group: "ops.kubeharness.dev", Resource: "playbooks"}
	for _, tc := range []struct {
		name    string
		err     error
		refused bool
	}{
		{"conflict", apierrors.NewConflict(gr, "pb-006", fmt.Errorf("the object has been modified")), true},
		{"not found", apierrors.NewNotFound(gr, "pb-006"), true},
		{"invalid", apierrors.NewBadRequest("bad"), true},
		{"too many requests", apierrors.NewTooManyRequests("slow down", 1), true},
		{"a server error while etcd is down", apierrors.NewInternalError(fmt.Errorf("etcdserver: leader changed")), false},
		{"a server timeout", apierrors.NewTimeoutError("request did not complete within 5s", 0), false},
		{"the answer timed out on the client", &url.Error{Op: "Patch", URL: "https://127.0.0.1", Err: context.DeadlineExceeded}, false},
		{"a wrapped refusal", fmt.Errorf("patching: %w", apierrors.NewConflict(gr, "pb-006", nil)), true},
	} {
		if got := Refused(tc.err); got != tc.refused {
			t.Errorf("%s: Refused = %v, want %v", tc.name, got, tc.refused)
		}
		w := &Workload{created: map[string]bool{}, advanced: map[string]bool{}, unsure: map[string]bool{}}
		w.advance("Playbook/pb-006", tc.err)
		if w.has(w.unsure, "Playbook/pb-006") == tc.refused || w.has(w.advanced, "Playbook/pb-006") || w.FailedWrites() != 1 {
			t.Errorf("%s: unsure=%v advanced=%v failed writes=%d; want unsure=%v, not advanced, 1 failed write",
				tc.name, w.unsure, w.advanced, w.FailedWrites(), !tc.refused)
		}
	}
	w := &Workload{created: map[string]bool{}, advanced: map[string]bool{}, unsure: map[string]bool{}}
	w.advance("Playbook/pb-007", nil)
	if !w.has(w.advanced, "Playbook/pb-007") || w.FailedWrites() != 0 {
		t.Errorf("a write that succeeded: advanced=%v failed writes=%d", w.advanced, w.FailedWrites())
	}
}
