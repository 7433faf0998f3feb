package deploy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	opsv1 "github.com/kubeharness/kubeharness/operator/api/ops/v1"

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

// WaitForWebhooks returns once a server-side dry-run Playbook create is
// admitted through the API server, which proves the API server reaches the
// webhook server and trusts its certificate. It sends one only once the
// webhook configurations carry a caBundle that verifies the served
// certificate (webhooksServing). managerDone, when it yields,
// means the manager stopped and waiting is pointless.
func WaitForWebhooks(ctx context.Context, c client.Client, managerDone <-chan error) error {
	ctx, cancel := context.WithTimeout(ctx, WebhookReadyTimeout)
	defer cancel()
	canary := &opsv1.Playbook{ObjectMeta: metav1.ObjectMeta{Name: "kubeharness-canary", Namespace: metav1.NamespaceDefault}}
	var last error
	for {
		if last = webhooksServing(ctx, c); last == nil {
			pb := canary.DeepCopy()
			last = c.Create(ctx, pb, client.DryRunAll)
			if last == nil && pb.Spec.Abstract != "" {
				return nil
			}
			if last == nil {
				last = errors.New("the dry-run Playbook came back without a defaulted abstract: the mutating webhook did not run")
			}
		}
		select {
		case err := <-managerDone: // a nil channel (a deployed manager) never fires
			return fmt.Errorf("manager stopped before its webhooks answered: %v", err)
		case <-ctx.Done():
			return fmt.Errorf("webhooks did not admit a dry-run Playbook within %s: %w", WebhookReadyTimeout, last)
		case <-time.After(poll):
		}
	}
}

// WebhookReadyTimeout bounds how long the webhooks may take to answer
// through the API server after the manager starts.
const WebhookReadyTimeout = 60 * time.Second

// poll is how often deploy's waits look again.
const poll = 100 * time.Millisecond
