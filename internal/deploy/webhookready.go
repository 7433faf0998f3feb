package testenv

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/operator/certs"
)

// webhooksServing reports why the API server could not call kubeharness's
// webhooks yet, or nil once it can: both webhook configurations carry a
// caBundle and, where they call a URL (a manager on this machine), the
// server there presents a certificate that bundle verifies.
//
// WaitForWebhooks asks this before it sends an admission: the API server
// retries a webhook call that fails to connect with a backoff of its own
// (0.5 s, then longer), so a request sent before the certificate is served
// is admitted up to a second after it could have been.
func webhooksServing(ctx context.Context, c client.Client) error {
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := c.Get(ctx, client.ObjectKey{Name: certs.MutatingWebhookConfigurationName}, mutating); err != nil {
		return err
	}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := c.Get(ctx, client.ObjectKey{Name: certs.ValidatingWebhookConfigurationName}, validating); err != nil {
		return err
	}
	var configs []admissionregistrationv1.WebhookClientConfig
	for _, w := range mutating.Webhooks {
		configs = append(configs, w.ClientConfig)
	}
	for _, w := range validating.Webhooks {
		configs = append(configs, w.ClientConfig)
	}
	dialed := map[string]bool{}
	for _, cc := range configs {
		if len(cc.CABundle) == 0 {
			return errors.New("no caBundle injected yet")
		}
		if cc.URL == nil {
			continue
		}
		u, err := url.Parse(*cc.URL)
		if err != nil {
			return fmt.Errorf("webhook URL %q: %w", *cc.URL, err)
		}
		if dialed[u.Host] {
			continue
		}
		if err := verifyServing(ctx, u.Host, u.Hostname(), cc.CABundle); err != nil {
			return err
		}
		dialed[u.Host] = true
	}
	return nil
}

// verifyServing completes a TLS handshake with addr and verifies its
// certificate for name against the PEM bundle.
func verifyServing(ctx context.Context, addr, name string, bundle []byte) error {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundle) {
		return errors.New("the caBundle holds no certificate")
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	d := tls.Dialer{NetDialer: &net.Dialer{}, Config: &tls.Config{RootCAs: roots, ServerName: name, MinVersion: tls.VersionTLS12}}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("the webhook server at %s: %w", addr, err)
	}
	return conn.Close()
}
