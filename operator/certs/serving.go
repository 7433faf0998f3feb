package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Serving holds the serving certificate in memory and reloads it whenever
// the serving Secret changes. Every replica runs it, leader or not.
type Serving struct {
	client.Client
	Options Options

	cert atomic.Pointer[tls.Certificate]
}

// GetCertificate is the webhook server's tls.Config.GetCertificate.
func (s *Serving) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c := s.cert.Load()
	if c == nil {
		return nil, errors.New("no serving certificate issued yet")
	}
	return c, nil
}

// Leaf returns the certificate being served, or nil.
func (s *Serving) Leaf() *x509.Certificate {
	if c := s.cert.Load(); c != nil {
		return c.Leaf
	}
	return nil
}

// TLSOpts sets the webhook server up to serve from memory, TLS 1.2 or newer.
func (s *Serving) TLSOpts(c *tls.Config) {
	c.GetCertificate = s.GetCertificate
	c.MinVersion = tls.VersionTLS12
}

// Reconcile loads the serving Secret.
func (s *Serving) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	secret := &corev1.Secret{}
	if err := s.Get(ctx, req.NamespacedName, secret); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	pair, err := tls.X509KeyPair(secret.Data[keyCert], secret.Data[keyKey])
	if err == nil {
		err = s.usable(pair.Leaf, time.Now())
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("loading Secret %s: %w", req.NamespacedName, err)
	}
	if prev := s.cert.Load(); prev != nil && prev.Leaf.Equal(pair.Leaf) {
		return ctrl.Result{}, nil
	}
	s.cert.Store(&pair)
	ctrl.LoggerFrom(ctx).Info("serving certificate loaded", "serial", pair.Leaf.SerialNumber.String(),
		"notAfter", pair.Leaf.NotAfter, "issuer", pair.Leaf.Issuer.CommonName)
	return ctrl.Result{}, nil
}

// usable refuses a certificate the API server would reject: one outside
// its validity period, or one that lacks a name or IP the webhooks are
// called by. The certificate served before stays; the issuer replaces the
// Secret's.
func (s *Serving) usable(leaf *x509.Certificate, now time.Time) error {
	if now.Before(leaf.NotBefore) || now.After(leaf.NotAfter) {
		return fmt.Errorf("its certificate is valid from %s to %s, not now (%s)",
			leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	for _, host := range s.Options.Defaulted().Hosts() {
		if err := leaf.VerifyHostname(host); err != nil {
			return fmt.Errorf("its certificate is not for every name the webhooks are called by: %w", err)
		}
	}
	return nil
}

// SetupWithManager registers the loader; it runs on every replica.
func (s *Serving) SetupWithManager(mgr ctrl.Manager) error {
	noLeader := false
	return ctrl.NewControllerManagedBy(mgr).
		Named("serving-certificate").
		For(&corev1.Secret{}, builder.WithPredicates(namePredicate(s.Options.Namespace, ServingSecretName))).
		WithOptions(controllerOptions(&noLeader)).
		Complete(s)
}

func namePredicate(namespace, name string) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == namespace && o.GetName() == name
	})
}

func controllerOptions(needLeader *bool) controller.Options {
	return controller.Options{NeedLeaderElection: needLeader}
}
