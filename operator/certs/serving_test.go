package certs

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// servingPair is a serving chain signed by ca for the Service, valid for an
// hour from now, and its key.
func servingPair(t *testing.T, ca *CA, now time.Time) (certPEM, keyPEM []byte) {
	t.Helper()
	return servingPairFor(t, ca, Options{}.Defaulted().DNSNames(), now)
}

// servingPairFor is servingPair for other hosts.
func servingPairFor(t *testing.T, ca *CA, hosts []string, now time.Time) (certPEM, keyPEM []byte) {
	t.Helper()
	key, keyPEM, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	csr, err := NewCSR(key, hosts[0], hosts, nil)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, err = ca.Sign(leafOf(parseRequestOrFail(t, csr)), time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM
}

func servingSecretWith(certPEM, keyPEM []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: DefaultNamespace, Name: ServingSecretName},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{keyCert: certPEM, keyKey: keyPEM},
	}
}

// TestServingLoadsAndKeepsServing: the Secret's chain and key are served
// once loaded; a Secret that does not hold a usable pair (a key of another
// certificate, garbage, nothing) is refused with an error and the
// certificate loaded before keeps being served; a new valid pair replaces
// it.
func TestServingLoadsAndKeepsServing(t *testing.T) {
	now := time.Now()
	ca := newTestCA(t, now.Add(-time.Hour), 24*time.Hour)
	firstCert, firstKey := servingPair(t, ca, now)
	secondCert, secondKey := servingPair(t, ca, now)
	_, otherKey := servingPair(t, ca, now)
	expiredCert, expiredKey := servingPair(t, ca, now.Add(-2*time.Hour))
	futureCert, futureKey := servingPair(t, ca, now.Add(time.Hour))
	otherHostCert, otherHostKey := servingPairFor(t, ca, []string{testHost}, now) // not the .cluster.local name

	c := fake.NewClientBuilder().WithScheme(testScheme(t)).Build()
	s := &Serving{Client: c, Options: Options{}.Defaulted()}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: DefaultNamespace, Name: ServingSecretName}}
	ctx := context.Background()

	// Nothing issued yet: nothing served, and the handshake is refused.
	if _, err := s.Reconcile(ctx, req); err != nil {
		t.Fatalf("Reconcile without a Secret: %v", err)
	}
	if got, err := s.GetCertificate(&tls.ClientHelloInfo{ServerName: testHost}); got != nil || err == nil {
		t.Errorf("GetCertificate before any Secret = %v, %v; want an error", got, err)
	}
	if s.Leaf() != nil {
		t.Error("Leaf before any Secret is not nil")
	}

	set := func(certPEM, keyPEM []byte) {
		t.Helper()
		secret := &corev1.Secret{}
		err := c.Get(ctx, req.NamespacedName, secret)
		if err != nil {
			if err := c.Create(ctx, servingSecretWith(certPEM, keyPEM)); err != nil {
				t.Fatal(err)
			}
			return
		}
		secret.Data = map[string][]byte{keyCert: certPEM, keyKey: keyPEM}
		if err := c.Update(ctx, secret); err != nil {
			t.Fatal(err)
		}
	}
	served := func() *tls.Certificate {
		t.Helper()
		got, err := s.GetCertificate(&tls.ClientHelloInfo{ServerName: testHost})
		if err != nil {
			t.Fatalf("GetCertificate: %v", err)
		}
		if got.Leaf == nil || !got.Leaf.Equal(s.Leaf()) {
			t.Fatal("GetCertificate and Leaf disagree")
		}
		return got
	}
	first := parseOneCert(t, firstCert)

	set(firstCert, firstKey)
	if res, err := s.Reconcile(ctx, req); err != nil || res != (ctrl.Result{}) {
		t.Fatalf("Reconcile with a valid pair = %+v, %v", res, err)
	}
	loaded := served()
	if !loaded.Leaf.Equal(first) {
		t.Fatal("the Secret's certificate is not served")
	}
	if err := VerifyServing(firstCert, ca.CertPEM, testHost, now); err != nil {
		t.Fatalf("test setup: %v", err)
	}

	// The same certificate again: nothing is swapped.
	if _, err := s.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if got := served(); got != loaded {
		t.Error("reloading the same certificate swapped the served one")
	}

	for _, bad := range []struct {
		name      string
		cert, key []byte
	}{
		{"key of another certificate", firstCert, otherKey},
		{"certificate of another key", secondCert, firstKey},
		{"garbage", []byte("-----BEGIN CERTIFICATE-----\nZ2FyYmFnZQ==\n-----END CERTIFICATE-----\n"), []byte("garbage")},
		{"empty", nil, nil},
		{"key only", nil, firstKey},
		{"expired", expiredCert, expiredKey},
		{"not yet valid", futureCert, futureKey},
		{"for another host", otherHostCert, otherHostKey},
	} {
		set(bad.cert, bad.key)
		if _, err := s.Reconcile(ctx, req); err == nil {
			t.Errorf("%s: Reconcile accepted it", bad.name)
		} else {
			checkErr(t, err, "loading Secret "+DefaultNamespace+"/"+ServingSecretName)
		}
		if got := served(); got != loaded {
			t.Errorf("%s: the previously served certificate was replaced", bad.name)
		}
	}

	// The Secret gone: the loaded certificate keeps being served.
	secret := &corev1.Secret{}
	if err := c.Get(ctx, req.NamespacedName, secret); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reconcile(ctx, req); err != nil {
		t.Fatalf("Reconcile after the Secret was deleted: %v", err)
	}
	if got := served(); got != loaded {
		t.Error("the Secret deleted: the served certificate changed")
	}

	// A renewed pair is loaded.
	set(secondCert, secondKey)
	if _, err := s.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if got := served(); !got.Leaf.Equal(parseOneCert(t, secondCert)) {
		t.Error("the renewed certificate is not served")
	}
}

// TestServingTLSOpts: the webhook server serves from memory, TLS 1.2 or
// newer, and a TLS handshake config built from it picks the loaded pair.
func TestServingTLSOpts(t *testing.T) {
	now := time.Now()
	ca := newTestCA(t, now.Add(-time.Hour), 24*time.Hour)
	certPEM, keyPEM := servingPair(t, ca, now)
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(servingSecretWith(certPEM, keyPEM)).Build()
	s := &Serving{Client: c, Options: Options{}.Defaulted()}
	cfg := &tls.Config{MinVersion: tls.VersionTLS10} //nolint:gosec // TLSOpts must raise it
	s.TLSOpts(cfg)
	if cfg.MinVersion != tls.VersionTLS12 {
		t.Errorf("MinVersion %x, want TLS 1.2", cfg.MinVersion)
	}
	if cfg.GetCertificate == nil {
		t.Fatal("GetCertificate not set")
	}
	if _, err := s.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(servingSecretWith(nil, nil))}); err != nil {
		t.Fatal(err)
	}
	got, err := cfg.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Leaf.Equal(parseOneCert(t, certPEM)) {
		t.Error("the handshake config does not serve the loaded certificate")
	}
}

// TestServingWatchesOnlyItsSecret: the loader reacts to the serving
// Secret in the manager's namespace only.
func TestServingWatchesOnlyItsSecret(t *testing.T) {
	p := namePredicate(DefaultNamespace, ServingSecretName)
	for _, tc := range []struct {
		ns, name string
		want     bool
	}{
		{DefaultNamespace, ServingSecretName, true},
		{DefaultNamespace, CASecretName, false},
		{"other", ServingSecretName, false},
	} {
		obj := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tc.ns, Name: tc.name}}
		if got := p.Update(event.UpdateEvent{ObjectOld: obj, ObjectNew: obj}); got != tc.want {
			t.Errorf("%s/%s: %t, want %t", tc.ns, tc.name, got, tc.want)
		}
	}
	if opts := controllerOptions(nil); opts.NeedLeaderElection != nil {
		t.Error("controllerOptions(nil) sets NeedLeaderElection")
	}
}
