package certs

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// certWorld is a fake API server with the issuer, approver and signer of
// one manager on it, a fake clock, and a log of every write.
type certWorld struct {
	t        *testing.T
	c        client.Client
	now      time.Time
	wc       *writeCounter
	rec      *events.FakeRecorder
	issuer   *Issuer
	approver *Approver
	signer   *Signer
	// injected is what the stubbed CAInjector.Injected answers; asked
	// records the bundles it was asked about.
	injected bool
	asked    [][]byte
}

func newCertWorld(t *testing.T, now time.Time, objs ...client.Object) *certWorld {
	t.Helper()
	w := &certWorld{t: t, now: now, rec: events.NewFakeRecorder(100)}
	o := Options{}.Defaulted()
	w.wc = &writeCounter{requester: testManager}
	w.c = fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(objs...).WithInterceptorFuncs(w.wc.funcs()).Build()
	clock := func() time.Time { return w.now }
	policy := NewPolicy(o, testManager)
	w.issuer = &Issuer{Client: w.c, Options: o, Policy: policy, Recorder: w.rec, Now: clock,
		Injected: func(_ context.Context, b []byte) (bool, error) {
			w.asked = append(w.asked, bytes.Clone(b))
			return w.injected, nil
		}}
	w.approver = &Approver{Client: w.c, Policy: policy, Recorder: w.rec}
	w.signer = &Signer{Client: w.c, Namespace: o.Namespace, Policy: policy, Now: clock}
	return w
}

// reconcile runs the issuer once, failing the test on an error.
func (w *certWorld) reconcile() ctrl.Result {
	w.t.Helper()
	res, err := w.issuer.Reconcile(context.Background(), ctrl.Request{NamespacedName: w.issuer.caKey()})
	if err != nil {
		w.t.Fatalf("Issuer.Reconcile: %v", err)
	}
	return res
}

// reconcileNoWrites runs the issuer once and fails when it writes anything.
func (w *certWorld) reconcileNoWrites(what string) ctrl.Result {
	w.t.Helper()
	before := len(w.wc.writes)
	caBefore, servingBefore := w.caSecret(), w.servingSecret()
	res := w.reconcile()
	if got := w.wc.writes[before:]; len(got) > 0 {
		w.t.Errorf("%s: reconcile wrote %q, want no writes", what, got)
	}
	if caAfter := w.caSecret(); caAfter.ResourceVersion != caBefore.ResourceVersion {
		w.t.Errorf("%s: CA Secret changed from resourceVersion %s to %s", what, caBefore.ResourceVersion, caAfter.ResourceVersion)
	}
	if servingAfter := w.servingSecret(); servingAfter != nil && servingBefore != nil &&
		servingAfter.ResourceVersion != servingBefore.ResourceVersion {
		w.t.Errorf("%s: serving Secret changed", what)
	}
	return res
}

// approveAndSign plays the approver and the signer on the manager's
// pending request.
func (w *certWorld) approveAndSign() {
	w.t.Helper()
	if w.issuer.pending == nil {
		w.t.Fatal("the issuer has no pending request to approve and sign")
	}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Name: w.issuer.pending.name}}
	if res, err := w.approver.Reconcile(context.Background(), req); err != nil || res != (ctrl.Result{}) {
		w.t.Fatalf("Approver.Reconcile = %+v, %v", res, err)
	}
	if _, err := w.signer.Reconcile(context.Background(), req); err != nil {
		w.t.Fatalf("Signer.Reconcile: %v", err)
	}
	csr := &certificatesv1.CertificateSigningRequest{}
	if err := w.c.Get(context.Background(), req.NamespacedName, csr); err != nil {
		w.t.Fatal(err)
	}
	if len(csr.Status.Certificate) == 0 {
		w.t.Fatalf("request %s was not signed: conditions %+v", csr.Name, csr.Status.Conditions)
	}
}

// issue runs a full request: submit, approve, sign, store.
func (w *certWorld) issue() {
	w.t.Helper()
	w.reconcile() // submits
	w.approveAndSign()
	w.reconcile() // stores
	if w.servingSecret() == nil {
		w.t.Fatal("no serving Secret after a request was issued")
	}
}

func (w *certWorld) caSecret() *corev1.Secret {
	w.t.Helper()
	s := &corev1.Secret{}
	if err := w.c.Get(context.Background(), w.issuer.caKey(), s); err != nil {
		w.t.Fatalf("getting the CA Secret: %v", err)
	}
	return s
}

func (w *certWorld) servingSecret() *corev1.Secret {
	w.t.Helper()
	s := &corev1.Secret{}
	if err := w.c.Get(context.Background(), w.issuer.servingKey(), s); err != nil {
		return nil
	}
	return s
}

// servingLeaf parses the stored serving certificate and checks its key.
func (w *certWorld) servingLeaf() *tls.Certificate {
	w.t.Helper()
	s := w.servingSecret()
	if s == nil {
		w.t.Fatal("no serving Secret")
	}
	pair, err := tls.X509KeyPair(s.Data[keyCert], s.Data[keyKey])
	if err != nil {
		w.t.Fatalf("serving Secret holds no usable key pair: %v", err)
	}
	return &pair
}

func (w *certWorld) setRotate(value string) {
	w.t.Helper()
	s := w.caSecret()
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[RotateAnnotation] = value
	if err := w.c.Update(context.Background(), s); err != nil {
		w.t.Fatal(err)
	}
}

// subjects lists the common names of the certificates in a PEM bundle.
func subjects(t *testing.T, bundlePEM []byte) []string {
	t.Helper()
	certs, err := ParseCertificates(bundlePEM)
	if err != nil {
		t.Fatalf("bundle: %v", err)
	}
	var out []string
	for _, c := range certs {
		out = append(out, c.Subject.CommonName)
	}
	return out
}

func hasEvent(evs []string, parts ...string) bool {
	for _, e := range evs {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(e, p)
		}
		if all {
			return true
		}
	}
	return false
}

// TestIssuerRotationPhases drives a CA rotation requested through the
// annotation through every phase: the new CA is published next to the old
// one while the old one still signs; only once the shipped objects publish
// that bundle does the new CA sign, and a serving certificate from it is
// requested and stored; the old CA stays published for RotationSettle
// after that, then is dropped. A second reconcile within a phase writes
// nothing.
func TestIssuerRotationPhases(t *testing.T) {
	start := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	w := newCertWorld(t, start)
	settle := w.issuer.Options.RotationSettle

	// Before any rotation: a CA and a serving certificate it signed.
	w.reconcile() // creates the CA Secret
	w.issue()
	oldCA := w.caSecret()
	oldName := subjects(t, oldCA.Data[keyCert])[0]
	oldLeaf := w.servingLeaf().Leaf
	if oldLeaf.Issuer.CommonName != oldName {
		t.Fatalf("serving certificate issued by %q, want the CA %q", oldLeaf.Issuer.CommonName, oldName)
	}
	w.reconcileNoWrites("steady state before the rotation")
	drainEvents(w.rec)

	w.now = w.now.Add(time.Minute)
	w.setRotate("2026-03-04T05:07:00Z")

	// Publishing: the new CA is published next to the old one, the old
	// one still signs.
	w.reconcile()
	s := w.caSecret()
	if got := s.Annotations[rotationPhaseAnnotation]; got != phasePublishing {
		t.Fatalf("phase %q after the rotation was requested, want %q", got, phasePublishing)
	}
	if !bytes.Equal(s.Data[keyCert], oldCA.Data[keyCert]) || !bytes.Equal(s.Data[keyKey], oldCA.Data[keyKey]) {
		t.Error("publishing: tls.crt/tls.key changed; the old CA must keep signing until the new one is trusted everywhere")
	}
	if len(s.Data[keyNextCert]) == 0 || len(s.Data[keyNextKey]) == 0 {
		t.Fatal("publishing: no next.crt/next.key")
	}
	next, err := ParseCA(s.Data[keyNextCert], s.Data[keyNextKey], w.now)
	if err != nil {
		t.Fatalf("publishing: next CA unusable: %v", err)
	}
	newName := next.Cert.Subject.CommonName
	if got, want := subjects(t, s.Data[keyCABundle]), []string{oldName, newName}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("publishing: ca.crt holds %v, want old and new %v", got, want)
	}
	if evs := drainEvents(w.rec); !hasEvent(evs, "Normal "+ReasonRotationStarted, newName, oldName) {
		t.Errorf("publishing: no %s event naming both CAs; events %q", ReasonRotationStarted, evs)
	}
	published := s.Data[keyCABundle]

	// While the shipped objects do not publish the bundle yet, nothing moves.
	w.asked = nil
	for i := range 2 {
		if res := w.reconcileNoWrites(fmt.Sprintf("publishing, not injected yet (%d)", i)); res.RequeueAfter != time.Second {
			t.Errorf("publishing, not injected: RequeueAfter %s, want 1s", res.RequeueAfter)
		}
	}
	if len(w.asked) != 2 || !bytes.Equal(w.asked[0], published) {
		t.Errorf("Injected was asked about %d bundles, want the published bundle each time", len(w.asked))
	}
	if got := w.servingLeaf().Leaf; !got.Equal(oldLeaf) {
		t.Error("publishing: the serving certificate changed before the new CA was injected")
	}

	// Switching: injected, the new CA signs.
	w.injected = true
	w.reconcile()
	s = w.caSecret()
	if got := s.Annotations[rotationPhaseAnnotation]; got != phaseSwitching {
		t.Fatalf("phase %q once injected, want %q", got, phaseSwitching)
	}
	if !bytes.Equal(s.Data[keyCert], next.CertPEM) || !bytes.Equal(s.Data[keyKey], next.KeyPEM) {
		t.Error("switching: tls.crt/tls.key are not the next CA")
	}
	if _, ok := s.Data[keyNextCert]; ok {
		t.Error("switching: next.crt still there")
	}
	if _, ok := s.Data[keyNextKey]; ok {
		t.Error("switching: next.key still there")
	}
	if !bytes.Equal(s.Data[keyCABundle], published) {
		t.Errorf("switching: ca.crt holds %v, want old and new still", subjects(t, s.Data[keyCABundle]))
	}
	if evs := drainEvents(w.rec); !hasEvent(evs, "Normal "+ReasonRotationSwitched, newName) {
		t.Errorf("switching: no %s event; events %q", ReasonRotationSwitched, evs)
	}

	// The old serving certificate is not the new CA's: the manager's
	// issued request is replaced, a new one requested, and what the new
	// CA signs stored.
	before := len(w.wc.writes)
	w.reconcile() // deletes the issued request
	if got := w.wc.writes[before:]; len(got) != 1 || !strings.HasPrefix(got[0], "delete ") {
		t.Errorf("switching: writes %q, want the old request deleted", got)
	}
	w.reconcile() // submits
	if w.issuer.pending == nil {
		t.Fatal("switching: no request submitted")
	}
	w.reconcileNoWrites("switching, request pending")
	w.approveAndSign()
	w.reconcile() // stores
	leaf := w.servingLeaf()
	if leaf.Leaf.Issuer.CommonName != newName {
		t.Errorf("switching: serving certificate issued by %q, want the new CA %q", leaf.Leaf.Issuer.CommonName, newName)
	}
	if err := VerifyServing(w.servingSecret().Data[keyCert], published, testHost, w.now); err != nil {
		t.Errorf("switching: the published bundle does not verify the new serving certificate: %v", err)
	}
	if got := w.caSecret().Annotations[rotationPhaseAnnotation]; got != phaseSwitching {
		t.Errorf("phase %q right after storing, want %q", got, phaseSwitching)
	}

	// Settling: the serving certificate switched, the old CA stays a while.
	w.now = w.now.Add(time.Second)
	settledAt := w.now
	if res := w.reconcile(); res.RequeueAfter != settle {
		t.Errorf("settling: RequeueAfter %s, want RotationSettle %s", res.RequeueAfter, settle)
	}
	s = w.caSecret()
	if got := s.Annotations[rotationPhaseAnnotation]; got != phaseSettling {
		t.Fatalf("phase %q once the serving certificate switched, want %q", got, phaseSettling)
	}
	if got := s.Annotations[settleSinceAnnotation]; got != settledAt.Format(time.RFC3339Nano) {
		t.Errorf("settling since %q, want %q", got, settledAt.Format(time.RFC3339Nano))
	}
	if !bytes.Equal(s.Data[keyCABundle], published) {
		t.Error("settling: the old CA was dropped at once")
	}
	w.now = settledAt.Add(settle / 3)
	if res := w.reconcileNoWrites("settling, before RotationSettle"); res.RequeueAfter != settle-settle/3 {
		t.Errorf("settling: RequeueAfter %s, want the rest %s", res.RequeueAfter, settle-settle/3)
	}
	w.now = settledAt.Add(settle - time.Nanosecond)
	w.reconcileNoWrites("settling, a nanosecond before RotationSettle")

	// A settling start that cannot be read (or lies ahead) restarts the
	// whole period from now; it never ends settling early.
	for _, bad := range []string{"garbage", "", w.now.Add(time.Hour).Format(time.RFC3339Nano)} {
		s = w.caSecret()
		s.Annotations[settleSinceAnnotation] = bad
		if err := w.c.Update(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		if res := w.reconcile(); res.RequeueAfter != settle {
			t.Errorf("settling since %q: RequeueAfter %s, want the whole RotationSettle %s", bad, res.RequeueAfter, settle)
		}
		s = w.caSecret()
		if got := s.Annotations[settleSinceAnnotation]; got != w.now.UTC().Format(time.RFC3339Nano) {
			t.Errorf("settling since %q: restarted at %q, want now %q", bad, got, w.now.UTC().Format(time.RFC3339Nano))
		}
		if !bytes.Equal(s.Data[keyCABundle], published) || s.Annotations[rotationPhaseAnnotation] != phaseSettling {
			t.Errorf("settling since %q: the old CA was dropped", bad)
		}
	}
	settledAt = w.now
	w.now = settledAt.Add(settle - time.Nanosecond)
	w.reconcileNoWrites("settling again, a nanosecond before RotationSettle")

	// Finished: the old CA is no longer published.
	w.now = settledAt.Add(settle)
	w.reconcile()
	s = w.caSecret()
	if got := subjects(t, s.Data[keyCABundle]); len(got) != 1 || got[0] != newName {
		t.Errorf("finished: ca.crt holds %v, want only the new CA %q", got, newName)
	}
	for _, a := range []string{rotationPhaseAnnotation, settleSinceAnnotation} {
		if v, ok := s.Annotations[a]; ok {
			t.Errorf("finished: annotation %s=%q left", a, v)
		}
	}
	if got := s.Annotations[rotatedAnnotation]; got != "2026-03-04T05:07:00Z" {
		t.Errorf("finished: %s=%q, want the requested value", rotatedAnnotation, got)
	}
	if !bytes.Equal(s.Data[keyCert], next.CertPEM) {
		t.Error("finished: tls.crt is not the new CA")
	}
	if evs := drainEvents(w.rec); !hasEvent(evs, "Normal "+ReasonRotationFinished, newName) {
		t.Errorf("finished: no %s event; events %q", ReasonRotationFinished, evs)
	}
	if err := VerifyServing(w.servingSecret().Data[keyCert], s.Data[keyCABundle], testHost, w.now); err != nil {
		t.Errorf("finished: the bundle left does not verify the serving certificate: %v", err)
	}

	// Done: nothing more happens for the same request, and nothing changes.
	res := w.reconcileNoWrites("after the rotation")
	if want := RenewAt(leaf.Leaf).Sub(w.now); res.RequeueAfter != want {
		t.Errorf("after the rotation: RequeueAfter %s, want renewal in %s", res.RequeueAfter, want)
	}
	if !w.servingLeaf().Leaf.Equal(leaf.Leaf) {
		t.Error("after the rotation: the serving certificate changed again")
	}

	// A new value of the annotation starts another rotation.
	w.setRotate("again")
	w.reconcile()
	if got := w.caSecret().Annotations[rotationPhaseAnnotation]; got != phasePublishing {
		t.Errorf("a new rotation value: phase %q, want %q", got, phasePublishing)
	}
}

// TestIssuerRotationStops: a rotation whose state the issuer cannot carry
// on is reported as a terminal error, and nothing is written.
func TestIssuerRotationStops(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	ca := newTestCA(t, now.Add(-time.Hour), 365*24*time.Hour)
	other := newTestCA(t, now.Add(-time.Hour), 365*24*time.Hour)
	cases := []struct {
		name    string
		mutate  func(*corev1.Secret)
		injErr  error
		wantErr string
		// terminal: retrying cannot help.
		terminal bool
	}{
		{
			name: "unknown phase",
			mutate: func(s *corev1.Secret) {
				s.Annotations[rotationPhaseAnnotation] = "sideways"
			},
			wantErr: `unknown rotation phase "sideways"`, terminal: true,
		},
		{
			name: "next CA's key does not match",
			mutate: func(s *corev1.Secret) {
				s.Annotations[rotationPhaseAnnotation] = phasePublishing
				s.Data[keyNextCert], s.Data[keyNextKey] = other.CertPEM, ca.KeyPEM
			},
			wantErr: "the rotation's next CA is unusable", terminal: true,
		},
		{
			name: "next CA missing",
			mutate: func(s *corev1.Secret) {
				s.Annotations[rotationPhaseAnnotation] = phasePublishing
			},
			wantErr: "the rotation's next CA is unusable", terminal: true,
		},
		{
			name: "the injector cannot tell",
			mutate: func(s *corev1.Secret) {
				s.Annotations[rotationPhaseAnnotation] = phasePublishing
				s.Data[keyNextCert], s.Data[keyNextKey] = other.CertPEM, other.KeyPEM
			},
			injErr:  errors.New("listing webhook configurations: boom"),
			wantErr: "boom",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			secret := caSecretFor(ca)
			secret.Annotations = map[string]string{RotateAnnotation: "now"}
			tc.mutate(secret)
			w := newCertWorld(t, now, secret)
			w.injected = true
			if tc.injErr != nil {
				w.issuer.Injected = func(context.Context, []byte) (bool, error) { return false, tc.injErr }
			}
			_, err := w.issuer.Reconcile(context.Background(), ctrl.Request{NamespacedName: w.issuer.caKey()})
			checkErr(t, err, tc.wantErr)
			if got := errors.Is(err, reconcile.TerminalError(nil)); got != tc.terminal {
				t.Errorf("terminal error: %t, want %t", got, tc.terminal)
			}
			if len(w.wc.writes) > 0 {
				t.Errorf("writes %q, want none", w.wc.writes)
			}
		})
	}
}

// TestIssuerRenewsAtTwoThirds: a stored serving certificate is kept, and
// the issuer comes back when it is due, until two thirds of its lifetime
// have passed; then the manager's issued request is replaced and a new
// certificate stored.
func TestIssuerRenewsAtTwoThirds(t *testing.T) {
	start := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	ca := newTestCA(t, start.Add(-time.Hour), 365*24*time.Hour)
	w := newCertWorld(t, start, caSecretFor(ca))
	w.issue()
	first := w.servingLeaf().Leaf
	if d := first.NotAfter.Sub(first.NotBefore); d < DefaultCertDuration {
		t.Fatalf("issued for %s, want at least %s", d, DefaultCertDuration)
	}
	renew := RenewAt(first)
	if want := first.NotBefore.Add(first.NotAfter.Sub(first.NotBefore) * 2 / 3); !renew.Equal(want) {
		t.Fatalf("RenewAt %s, want two thirds into the lifetime %s", renew, want)
	}

	for _, at := range []time.Time{start, start.Add(12 * time.Hour), renew.Add(-time.Second)} {
		w.now = at
		if res := w.reconcileNoWrites("before two thirds at " + at.String()); res.RequeueAfter != renew.Sub(at) {
			t.Errorf("at %s: RequeueAfter %s, want %s", at, res.RequeueAfter, renew.Sub(at))
		}
	}

	w.now = renew
	before := len(w.wc.writes)
	w.reconcile()
	if got := w.wc.writes[before:]; len(got) != 1 || !strings.HasPrefix(got[0], "delete ") {
		t.Fatalf("at two thirds: writes %q, want the issued request deleted", got)
	}
	w.issue()
	second := w.servingLeaf().Leaf
	if second.Equal(first) {
		t.Fatal("at two thirds: the serving certificate was not renewed")
	}
	if second.SerialNumber.Cmp(first.SerialNumber) == 0 {
		t.Error("the renewed certificate has the old serial")
	}
	if !second.NotBefore.After(first.NotBefore) {
		t.Errorf("renewed certificate valid from %s, not after the old one's %s", second.NotBefore, first.NotBefore)
	}
	if res := w.reconcileNoWrites("after renewal"); res.RequeueAfter != RenewAt(second).Sub(w.now) {
		t.Errorf("after renewal: RequeueAfter %s, want %s", res.RequeueAfter, RenewAt(second).Sub(w.now))
	}
	if evs := drainEvents(w.rec); !hasEvent(evs, "Normal "+ReasonCertificateIssued) {
		t.Errorf("no %s event; events %q", ReasonCertificateIssued, evs)
	}
}

// TestIssuerReportsUnusableCA: a CA Secret the issuer cannot use is
// reported in a Warning Event saying how to fix it, the error is terminal,
// and the Secret is never replaced or touched, nor is anything requested.
func TestIssuerReportsUnusableCA(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	good := newTestCA(t, now.Add(-time.Hour), 365*24*time.Hour)
	other := newTestCA(t, now.Add(-time.Hour), 365*24*time.Hour)
	expired := newTestCA(t, now.Add(-48*time.Hour), 24*time.Hour)
	leafPEM, err := good.Sign(leafOf(parseRequestOrFail(t, newTestCSR(t, []string{testHost}, nil))), time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		cert, key []byte
		wantErr   string
	}{
		{name: "garbage", cert: []byte("not a certificate"), key: []byte("not a key"), wantErr: "no PEM-encoded certificate"},
		{name: "empty", wantErr: "no PEM-encoded certificate"},
		{name: "key of another CA", cert: good.CertPEM, key: other.KeyPEM, wantErr: "does not belong to the certificate"},
		{name: "expired", cert: expired.CertPEM, key: expired.KeyPEM, wantErr: "expired at"},
		{name: "not a CA", cert: leafPEM, key: good.KeyPEM, wantErr: "is not a CA"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			secret := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: DefaultNamespace, Name: CASecretName,
					Annotations: map[string]string{RotateAnnotation: "now"}},
				Type: corev1.SecretTypeTLS,
				Data: map[string][]byte{keyCert: tc.cert, keyKey: tc.key, keyCABundle: good.CertPEM},
			}
			w := newCertWorld(t, now, secret)
			orig := w.caSecret()
			for i := range 2 {
				res, err := w.issuer.Reconcile(context.Background(), ctrl.Request{NamespacedName: w.issuer.caKey()})
				checkErr(t, err, tc.wantErr)
				if !errors.Is(err, reconcile.TerminalError(nil)) {
					t.Errorf("reconcile %d: error %v is not terminal", i, err)
				}
				if res != (ctrl.Result{}) {
					t.Errorf("reconcile %d: result %+v, want none", i, res)
				}
			}
			if len(w.wc.writes) > 0 {
				t.Errorf("writes %q, want none: an unusable CA Secret is never replaced", w.wc.writes)
			}
			got := w.caSecret()
			if got.ResourceVersion != orig.ResourceVersion || !bytes.Equal(got.Data[keyCert], tc.cert) || !bytes.Equal(got.Data[keyKey], tc.key) {
				t.Error("the CA Secret was changed")
			}
			evs := drainEvents(w.rec)
			if len(evs) != 2 {
				t.Errorf("%d events, want one per reconcile: %q", len(evs), evs)
			}
			for _, want := range []string{"Warning " + ReasonCAUnusable, DefaultNamespace + "/" + CASecretName, tc.wantErr,
				"fix it, or delete it and a new CA is made"} {
				if !hasEvent(evs, want) {
					t.Errorf("no event says %q; events %q", want, evs)
				}
			}
		})
	}
}

// TestIssuerCreatesMissingCA: with no CA Secret, one is made holding a
// usable CA that is also the published bundle, and reported.
func TestIssuerCreatesMissingCA(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	w := newCertWorld(t, now)
	if res := w.reconcile(); res != (ctrl.Result{}) {
		t.Errorf("result %+v, want none: the create event comes back", res)
	}
	s := w.caSecret()
	ca, err := ParseCA(s.Data[keyCert], s.Data[keyKey], now)
	if err != nil {
		t.Fatalf("created CA unusable: %v", err)
	}
	if !bytes.Equal(s.Data[keyCABundle], ca.CertPEM) {
		t.Error("ca.crt is not the CA")
	}
	if got := ca.Cert.NotAfter.Sub(now); got != DefaultCADuration {
		t.Errorf("CA valid for %s, want %s", got, DefaultCADuration)
	}
	if evs := drainEvents(w.rec); !hasEvent(evs, "Normal "+ReasonCACreated, ca.Cert.Subject.CommonName) {
		t.Errorf("no %s event; events %q", ReasonCACreated, evs)
	}
	if len(w.wc.writes) != 1 {
		t.Errorf("writes %q, want the CA Secret only", w.wc.writes)
	}
}

// TestIssuerRenewsWhileRotationWaits: while a rotation waits in the
// publishing phase for the shipped objects to publish the bundle (which
// may take arbitrarily long, e.g. while the injector is forbidden), the old
// CA still signs, so the serving certificate must still be renewed when
// due; otherwise a stuck rotation lets it expire.
func TestIssuerRenewsWhileRotationWaits(t *testing.T) {
	start := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	ca := newTestCA(t, start.Add(-time.Hour), 365*24*time.Hour)
	w := newCertWorld(t, start, caSecretFor(ca))
	w.issue()
	first := w.servingLeaf().Leaf
	w.setRotate("stuck")
	w.reconcile()
	if got := w.caSecret().Annotations[rotationPhaseAnnotation]; got != phasePublishing {
		t.Fatalf("phase %q, want %q", got, phasePublishing)
	}
	// The shipped objects never publish the bundle; time passes beyond
	// the renewal point, up to the certificate's expiry.
	w.now = RenewAt(first).Add(time.Minute)
	var renewed bool
	for w.now.Before(first.NotAfter) {
		w.reconcile()
		if w.issuer.pending != nil {
			renewed = true
			break
		}
		w.now = w.now.Add(time.Hour)
	}
	if !renewed {
		t.Fatalf("while a CA rotation waits in phase %q for injection, the serving certificate (NotAfter %s) was not "+
			"renewed although the old CA still signs; reconciles until past its expiry (%s) requested nothing",
			phasePublishing, first.NotAfter.Format(time.RFC3339), w.now.Format(time.RFC3339))
	}
	if got := w.caSecret().Annotations[rotationPhaseAnnotation]; got != phasePublishing {
		t.Errorf("renewing moved the rotation to phase %q; it must keep waiting in %q", got, phasePublishing)
	}
}
