package certs

import (
	"context"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// requestBy is a pending CertificateSigningRequest named name that
// requester created.
func requestBy(t *testing.T, name, requester string) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: newTestCSR(t, []string{testHost}, nil), SignerName: SignerName, Username: requester, Usages: ServingUsages,
		},
	}
}

func drainEvents(r *events.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// TestIssuerLeavesOthersRequestsAlone: a request another user created under
// a name the manager requests under is never deleted; the manager says
// whose it is and what to do, and requests under its fallback name.
func TestIssuerLeavesOthersRequestsAlone(t *testing.T) {
	o := Options{}.Defaulted()
	primary, fallback := o.CSRNames()[0], o.CSRNames()[1]
	now := time.Now()
	ca := newTestCA(t, now.Add(-time.Hour), 365*24*time.Hour)
	cases := []struct {
		name     string
		existing []*certificatesv1.CertificateSigningRequest
		// pending is the manager's outstanding request, when it has one.
		pending *pendingRequest
		// wantKept must still exist, unchanged; wantCreated is requested.
		wantKept    []string
		wantGone    []string
		wantCreated string
		wantEvents  []string
	}{
		{
			name:        "nothing there: the first name",
			wantCreated: primary,
		},
		{
			name:        "a squatter holds the first name: the fallback, squatter kept",
			existing:    []*certificatesv1.CertificateSigningRequest{requestBy(t, primary, "squatter")},
			wantKept:    []string{primary},
			wantCreated: fallback,
			wantEvents: []string{"Warning " + ReasonCSRNameTaken, `created by "squatter"`, "kubectl delete certificatesigningrequest " + primary,
				"requesting under " + fallback + " instead"},
		},
		{
			name:       "squatters hold both names: nothing deleted, nothing requested",
			existing:   []*certificatesv1.CertificateSigningRequest{requestBy(t, primary, "squatter"), requestBy(t, fallback, "other")},
			wantKept:   []string{primary, fallback},
			wantEvents: []string{`created by "other"`, "no other name is left"},
		},
		{
			name:        "the manager's pending request was replaced by a squatter's: kept, fallback",
			existing:    []*certificatesv1.CertificateSigningRequest{requestBy(t, primary, "squatter")},
			pending:     &pendingRequest{name: primary, uid: "uid-deleted-meanwhile"},
			wantKept:    []string{primary},
			wantCreated: fallback,
			wantEvents:  []string{`created by "squatter"`},
		},
		{
			name:     "the manager's own request whose key is gone is replaced",
			existing: []*certificatesv1.CertificateSigningRequest{requestBy(t, primary, testManager)},
			wantGone: []string{primary},
		},
		{
			name:     "a squatter on the first name, the manager's own stale one on the fallback",
			existing: []*certificatesv1.CertificateSigningRequest{requestBy(t, primary, "squatter"), requestBy(t, fallback, testManager)},
			wantKept: []string{primary},
			wantGone: []string{fallback},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(caSecretFor(ca))
			for _, csr := range tc.existing {
				b = b.WithObjects(csr)
			}
			c := b.Build()
			rec := events.NewFakeRecorder(100)
			r := &Issuer{Client: c, Options: o, Policy: NewPolicy(o, testManager), Recorder: rec, Now: func() time.Time { return now },
				Injected: func(context.Context, []byte) (bool, error) { return true, nil }, pending: tc.pending}
			if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: r.caKey()}); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			get := func(name string) *certificatesv1.CertificateSigningRequest {
				csr := &certificatesv1.CertificateSigningRequest{}
				if err := c.Get(context.Background(), types.NamespacedName{Name: name}, csr); err != nil {
					return nil
				}
				return csr
			}
			for _, name := range tc.wantKept {
				got := get(name)
				if got == nil {
					t.Errorf("CertificateSigningRequest %s of another user was deleted", name)
					continue
				}
				if got.UID != types.UID("uid-"+name) {
					t.Errorf("CertificateSigningRequest %s was replaced", name)
				}
			}
			for _, name := range tc.wantGone {
				if get(name) != nil {
					t.Errorf("the manager's stale CertificateSigningRequest %s was not deleted", name)
				}
			}
			var created []string
			list := &certificatesv1.CertificateSigningRequestList{}
			if err := c.List(context.Background(), list, client.MatchingLabels{"app.kubernetes.io/managed-by": "kubeharness"}); err != nil {
				t.Fatal(err)
			}
			for _, csr := range list.Items {
				created = append(created, csr.Name)
			}
			if tc.wantCreated == "" && len(created) > 0 {
				t.Errorf("requested %v, want nothing", created)
			}
			if tc.wantCreated != "" && (len(created) != 1 || created[0] != tc.wantCreated) {
				t.Errorf("requested %v, want [%s]", created, tc.wantCreated)
			}
			all := strings.Join(drainEvents(rec), "\n")
			for _, want := range tc.wantEvents {
				if !strings.Contains(all, want) {
					t.Errorf("no event says %q; events:\n%s", want, all)
				}
			}
		})
	}
}
