package certs

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// managersRequest is a pending request exactly as the manager's issuer
// submits it, named name.
func managersRequest(t *testing.T, p Policy, name string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, _, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	request, err := p.NewRequest(key)
	if err != nil {
		t.Fatal(err)
	}
	seconds := int32(p.Lifetime(nil) / time.Second)
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: request, SignerName: SignerName, Username: p.Username, Usages: ServingUsages,
			ExpirationSeconds: &seconds,
		},
	}
}

// writeCounter counts every write through a fake client as "verb name",
// can make the approval subresource fail, and, with requester set, records
// it as the creator of new requests, as the API server does.
type writeCounter struct {
	writes      []string
	requester   string
	approvalErr error
}

func (w *writeCounter) funcs() interceptor.Funcs {
	note := func(verb string, obj client.Object) { w.writes = append(w.writes, verb+" "+obj.GetName()) }
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok && w.requester != "" {
				csr.Spec.Username = w.requester
			}
			note("create", obj)
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			note("update", obj)
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			note("patch", obj)
			return c.Patch(ctx, obj, patch, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			note("delete", obj)
			return c.Delete(ctx, obj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			note("update/"+sub, obj)
			if sub == "approval" && w.approvalErr != nil {
				return w.approvalErr
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			note("patch/"+sub, obj)
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	}
}

func withCondition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequest {
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: t, Status: corev1.ConditionTrue, Reason: "ByHand", LastUpdateTime: metav1.Now(),
	})
	return csr
}

// TestApproverApprovesOnlyTheManagersRequest: the manager's own request is
// approved with one write to the approval subresource; every other request
// (another requester, another signer, another host, one already approved
// or denied, one gone) is left alone with no write at all.
func TestApproverApprovesOnlyTheManagersRequest(t *testing.T) {
	p := NewPolicy(Options{}, testManager)
	cases := []struct {
		name string
		// csr is nil for a request that does not exist.
		csr         func() *certificatesv1.CertificateSigningRequest
		wantApprove bool
	}{
		{
			name:        "the manager's own request",
			csr:         func() *certificatesv1.CertificateSigningRequest { return managersRequest(t, p, "own") },
			wantApprove: true,
		},
		{
			name: "another requester",
			csr: func() *certificatesv1.CertificateSigningRequest {
				c := managersRequest(t, p, "other-requester")
				c.Spec.Username = "system:serviceaccount:tenant:default"
				return c
			},
		},
		{
			name: "another signer",
			csr: func() *certificatesv1.CertificateSigningRequest {
				c := managersRequest(t, p, "other-signer")
				c.Spec.SignerName = "kubernetes.io/kubelet-serving"
				return c
			},
		},
		{
			name: "a host outside the policy",
			csr: func() *certificatesv1.CertificateSigningRequest {
				c := managersRequest(t, p, "other-host")
				c.Spec.Request = newTestCSR(t, []string{testHost, "kubernetes.default.svc"}, nil)
				return c
			},
		},
		{
			name: "client auth usage",
			csr: func() *certificatesv1.CertificateSigningRequest {
				c := managersRequest(t, p, "client-auth")
				c.Spec.Usages = append(c.Spec.Usages, certificatesv1.UsageClientAuth)
				return c
			},
		},
		{
			name: "already approved",
			csr: func() *certificatesv1.CertificateSigningRequest {
				return withCondition(managersRequest(t, p, "approved"), certificatesv1.CertificateApproved)
			},
		},
		{
			name: "already denied",
			csr: func() *certificatesv1.CertificateSigningRequest {
				return withCondition(managersRequest(t, p, "denied"), certificatesv1.CertificateDenied)
			},
		},
		{
			name: "gone",
			csr:  func() *certificatesv1.CertificateSigningRequest { return nil },
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			csr := tc.csr()
			name := "gone"
			b := fake.NewClientBuilder().WithScheme(testScheme(t))
			if csr != nil {
				name = csr.Name
				b = b.WithObjects(csr)
			}
			wc := &writeCounter{}
			c := b.WithInterceptorFuncs(wc.funcs()).Build()
			rec := events.NewFakeRecorder(10)
			a := &Approver{Client: c, Policy: p, Recorder: rec}
			res, err := a.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: name}})
			if err != nil || res != (ctrl.Result{}) {
				t.Fatalf("Reconcile = %+v, %v; want no requeue, no error", res, err)
			}
			if evs := drainEvents(rec); len(evs) > 0 {
				t.Errorf("events %q, want none", evs)
			}
			if !tc.wantApprove {
				if len(wc.writes) > 0 {
					t.Errorf("writes %q, want none: the request is not the approver's to decide", wc.writes)
				}
				return
			}
			if len(wc.writes) != 1 || wc.writes[0] != "update/approval "+name {
				t.Errorf("writes %q, want one approval", wc.writes)
			}
			got := &certificatesv1.CertificateSigningRequest{}
			if err := c.Get(context.Background(), types.NamespacedName{Name: name}, got); err != nil {
				t.Fatal(err)
			}
			if !hasCondition(got, certificatesv1.CertificateApproved) {
				t.Fatalf("not approved: conditions %+v", got.Status.Conditions)
			}
			if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Reason != "KubeharnessAutoApproved" {
				t.Errorf("conditions %+v, want one Approved KubeharnessAutoApproved", got.Status.Conditions)
			}
			// Approved now: a second reconcile does nothing.
			wc.writes = nil
			if res, err := a.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: name}}); err != nil || res != (ctrl.Result{}) {
				t.Fatalf("second Reconcile = %+v, %v", res, err)
			}
			if len(wc.writes) > 0 {
				t.Errorf("second reconcile wrote %q", wc.writes)
			}
		})
	}
}

// TestApproverForbidden: when the manager may not approve for its signer,
// it records one Warning Event that says what RBAC to grant, and looks
// again every forbiddenRetry instead of failing with backoff; the request
// stays undecided.
func TestApproverForbidden(t *testing.T) {
	p := NewPolicy(Options{}, testManager)
	csr := managersRequest(t, p, "own")
	wc := &writeCounter{approvalErr: apierrors.NewForbidden(
		schema.GroupResource{Group: "certificates.k8s.io", Resource: "signers"}, SignerName,
		errors.New("user cannot approve"))}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(csr).WithInterceptorFuncs(wc.funcs()).Build()
	rec := events.NewFakeRecorder(10)
	a := &Approver{Client: c, Policy: p, Recorder: rec}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Name: csr.Name}}

	res, err := a.Reconcile(context.Background(), req)
	if err != nil {
		t.Fatalf("Reconcile returned error %v, want a plain requeue", err)
	}
	if res.RequeueAfter != DefaultForbiddenRetry || DefaultForbiddenRetry != 2*time.Second {
		t.Errorf("RequeueAfter %s, want %s (2s)", res.RequeueAfter, DefaultForbiddenRetry)
	}
	evs := drainEvents(rec)
	if len(evs) != 1 {
		t.Fatalf("%d events %q, want one", len(evs), evs)
	}
	for _, want := range []string{"Warning " + ReasonApprovalForbidden, testManager,
		"verb approve on certificates.k8s.io signers with resourceNames [" + SignerName + "]",
		"config/rbac", "retrying every 2s", "user cannot approve"} {
		if !strings.Contains(evs[0], want) {
			t.Errorf("event %q does not say %q", evs[0], want)
		}
	}
	a.ForbiddenRetry = 300 * time.Millisecond
	if res, err := a.Reconcile(context.Background(), req); err != nil || res.RequeueAfter != a.ForbiddenRetry {
		t.Errorf("with ForbiddenRetry 300ms: RequeueAfter %s, %v; want 300ms", res.RequeueAfter, err)
	}
	if evs := drainEvents(rec); len(evs) != 1 || !strings.Contains(evs[0], "retrying every 300ms") {
		t.Errorf("with ForbiddenRetry 300ms: events %q, want one saying so", evs)
	}
	got := &certificatesv1.CertificateSigningRequest{}
	if err := c.Get(context.Background(), req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	if decided(got) {
		t.Errorf("request decided despite the forbidden approval: %+v", got.Status.Conditions)
	}

	// Once RBAC is fixed, the next retry approves.
	wc.approvalErr = nil
	if res, err := a.Reconcile(context.Background(), req); err != nil || res != (ctrl.Result{}) {
		t.Fatalf("after the fix: Reconcile = %+v, %v", res, err)
	}
	if err := c.Get(context.Background(), req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	if !hasCondition(got, certificatesv1.CertificateApproved) {
		t.Error("after the fix: not approved")
	}
}

// TestApproverOtherErrors: an approval that fails for another reason is
// returned as an error (retried with backoff), with no Event.
func TestApproverOtherErrors(t *testing.T) {
	p := NewPolicy(Options{}, testManager)
	csr := managersRequest(t, p, "own")
	wc := &writeCounter{approvalErr: apierrors.NewConflict(
		schema.GroupResource{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}, csr.Name, errors.New("changed"))}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(csr).WithInterceptorFuncs(wc.funcs()).Build()
	rec := events.NewFakeRecorder(10)
	a := &Approver{Client: c, Policy: p, Recorder: rec}
	_, err := a.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: csr.Name}})
	checkErr(t, err, "approving CertificateSigningRequest own")
	if evs := drainEvents(rec); len(evs) > 0 {
		t.Errorf("events %q, want none", evs)
	}
}

// TestOurSignerPredicate: the approver and signer watch only requests for
// kubeharness.dev/webhook-serving.
func TestOurSignerPredicate(t *testing.T) {
	p := ourSigner()
	ours := managersRequest(t, NewPolicy(Options{}, testManager), "ours")
	theirs := ours.DeepCopy()
	theirs.Spec.SignerName = "kubernetes.io/kube-apiserver-client"
	if !p.Create(event.CreateEvent{Object: ours}) {
		t.Error("a request for our signer is filtered out")
	}
	if p.Create(event.CreateEvent{Object: theirs}) {
		t.Error("a request for another signer is let through")
	}
	if p.Create(event.CreateEvent{Object: &corev1.Secret{}}) {
		t.Error("a Secret is let through")
	}
}
