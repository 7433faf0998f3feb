package manager

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	opsv1 "github.com/kubeharness/kubeharness/operator/api/ops/v1"
	"github.com/kubeharness/kubeharness/operator/certs"
	playbookwebhook "github.com/kubeharness/kubeharness/webhook/playbook"
)

// What the canary calls: the Playbook defaulting webhook in the mutating
// configuration config/webhook installs.
const (
	canaryConfiguration = certs.MutatingWebhookConfigurationName
	canaryWebhook       = "mplaybook.kubeharness.dev"
)

// WebhookCanary returns the readiness canary of one replica: an
// AdmissionReview sent over TLS to this replica's own webhook server at
// addr, as the API server would send it. It passes only when
//   - the served certificate verifies, for serverName, against the caBundle
//     the API server uses: the one in the live mutating webhook
//     configuration, not the one the manager meant to publish;
//   - the Playbook defaulting webhook answers, allowing the request with a
//     patch that fills in the abstract.
//
// A dry-run create through the API server cannot gate one replica's
// readiness: behind a Service, it reaches only replicas that are ready
// already, so the first could never become ready. The harness proves the
// path through the API server separately, in a namespace the webhooks
// select, before any spec runs.
func WebhookCanary(c client.Reader, addr, serverName string) func() error {
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		bundle, err := liveCABundle(ctx, c)
		if err != nil {
			return err
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(bundle) {
			return fmt.Errorf("the caBundle of webhook %s holds no certificate", canaryWebhook)
		}
		return admitCanary(ctx, addr, &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12})
	}
}

func liveCABundle(ctx context.Context, c client.Reader) ([]byte, error) {
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := c.Get(ctx, types.NamespacedName{Name: canaryConfiguration}, cfg); err != nil {
		return nil, fmt.Errorf("reading MutatingWebhookConfiguration %s: %w", canaryConfiguration, err)
	}
	for _, w := range cfg.Webhooks {
		if w.Name != canaryWebhook {
			continue
		}
		if len(w.ClientConfig.CABundle) == 0 {
			return nil, fmt.Errorf("webhook %s in MutatingWebhookConfiguration %s has no caBundle yet", canaryWebhook, canaryConfiguration)
		}
		return w.ClientConfig.CABundle, nil
	}
	return nil, fmt.Errorf("MutatingWebhookConfiguration %s has no webhook %s", canaryConfiguration, canaryWebhook)
}

// admitCanary sends a Playbook CREATE review to the defaulting webhook at
// addr and checks that it comes back allowed with the abstract filled in.
func admitCanary(ctx context.Context, addr string, tlsConfig *tls.Config) error {
	pb := &opsv1.Playbook{
		TypeMeta:   metav1.TypeMeta{APIVersion: opsv1.GroupVersion.String(), Kind: "Playbook"},
		ObjectMeta: metav1.ObjectMeta{Name: "kubeharness-canary", Namespace: "kubeharness-canary"},
	}
	raw, err := json.Marshal(pb)
	if err != nil {
		return err
	}
	uid := types.UID("kubeharness-canary-" + strconv.FormatInt(time.Now().UnixNano(), 36))
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:      uid,
			Kind:     metav1.GroupVersionKind{Group: opsv1.GroupVersion.Group, Version: opsv1.GroupVersion.Version, Kind: "Playbook"},
			Resource: metav1.GroupVersionResource{Group: opsv1.GroupVersion.Group, Version: opsv1.GroupVersion.Version, Resource: "playbooks"},
			Name:     pb.Name, Namespace: pb.Namespace, Operation: admissionv1.Create,
			Object: runtime.RawExtension{Raw: raw},
			DryRun: ptr.To(true),
		},
	}
	body, err := json.Marshal(review)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+addr+playbookwebhook.MutatePath, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("calling the webhook server at %s as the API server would: %w", addr, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("webhook %s answered HTTP %d: %s", playbookwebhook.MutatePath, resp.StatusCode, bytes.TrimSpace(data))
	}
	var answer admissionv1.AdmissionReview
	if err := json.Unmarshal(data, &answer); err != nil {
		return fmt.Errorf("webhook %s answered something that is not an AdmissionReview: %w", playbookwebhook.MutatePath, err)
	}
	switch r := answer.Response; {
	case r == nil:
		return fmt.Errorf("webhook %s answered an AdmissionReview without a response", playbookwebhook.MutatePath)
	case r.UID != uid:
		return fmt.Errorf("webhook %s answered for request %q, not %q", playbookwebhook.MutatePath, r.UID, uid)
	case !r.Allowed:
		msg := ""
		if r.Result != nil {
			msg = r.Result.Message
		}
		return fmt.Errorf("webhook %s denied the canary Playbook: %s", playbookwebhook.MutatePath, msg)
	case !strings.Contains(string(r.Patch), "/spec/abstract"):
		return fmt.Errorf("webhook %s did not default the canary Playbook's abstract (patch %s)", playbookwebhook.MutatePath, r.Patch)
	}
	return nil
}

// canaryAddr is where this replica's webhook server is dialled: its
// listening host, or loopback when it listens on every address.
func canaryAddr(host string, port int) string {
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}
