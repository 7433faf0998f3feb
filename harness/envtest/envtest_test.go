package envtest_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kubeharness/kubeharness/harness/envtest"
	"github.com/kubeharness/kubeharness/harness/internal/testbins"
)

// assets points KUBEBUILDER_ASSETS at the control-plane binaries: as set,
// or those `kubeharness bins use` put in this repository's bin/.
func assets(t *testing.T) {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") != "" {
		return
	}
	dir, _, _, err := testbins.Default()
	if err == nil {
		t.Setenv("KUBEBUILDER_ASSETS", dir)
		return
	}
	t.Skipf("no control-plane binaries (%v): run `kubeharness bins use` in this repository, or set KUBEBUILDER_ASSETS", err)
}

// TestStartInstallsCRDsAndWebhooks starts an Environment set up as a
// kubebuilder webhook suite sets it up and proves, through the API server,
// that the CRD is served and that the API server calls a webhook served
// with WebhookInstallOptions' certificate; then that Stop stops the API
// server and may be called again.
func TestStartInstallsCRDsAndWebhooks(t *testing.T) {
	assets(t)
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("testdata", "crd")},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths: []string{filepath.Join("testdata", "webhook")},
		},
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = env.Stop()
		}
	})
	if cfg != env.Config || len(env.KubeConfig) == 0 {
		t.Fatalf("Start must return Config and fill KubeConfig (config %p, Config %p, KubeConfig %d bytes)", cfg, env.Config, len(env.KubeConfig))
	}
	if len(env.CRDs) != 1 || env.CRDs[0].Name != "widgets.test.kubeharness.dev" {
		t.Fatalf("CRDs after Start: %v", env.CRDs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	widget := &unstructured.Unstructured{}
	widget.SetGroupVersionKind(schema.GroupVersionKind{Group: "test.kubeharness.dev", Version: "v1", Kind: "Widget"})
	widget.SetNamespace("default")
	widget.SetName("w")
	if err := c.Create(ctx, widget); err != nil {
		t.Fatalf("creating a Widget of the installed CRD: %v", err)
	}

	// The webhook server a suite runs, on the address and certificate
	// WebhookInstallOptions chose.
	wo := &env.WebhookInstallOptions
	srv := webhook.NewServer(webhook.Options{Host: wo.LocalServingHost, Port: wo.LocalServingPort, CertDir: wo.LocalServingCertDir})
	srv.Register("/deny-labelled", &admission.Webhook{Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		return admission.Denied("labelled to be denied")
	})})
	srvCtx, stopSrv := context.WithCancel(ctx)
	defer stopSrv()
	go func() { _ = srv.Start(srvCtx) }()
	addr := net.JoinHostPort(wo.LocalServingHost, strconv.Itoa(wo.LocalServingPort))
	if err := waitFor(ctx, func() error { return srv.StartedChecker()(&http.Request{}) }); err != nil {
		t.Fatalf("webhook server on %s: %v", addr, err)
	}
	denied := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "denied", Namespace: "default",
		Labels: map[string]string{"test.kubeharness.dev/deny": "true"}}}
	err = waitFor(ctx, func() error {
		err := c.Create(ctx, denied)
		if err == nil {
			return errors.New("created: the webhook was not called")
		}
		if !strings.Contains(err.Error(), "labelled to be denied") {
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatalf("a labelled ConfigMap must be denied by the webhook: %v", err)
	}
	allowed := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "allowed", Namespace: "default"}}
	if err := c.Create(ctx, allowed); err != nil {
		t.Fatalf("an unlabelled ConfigMap must be admitted: %v", err)
	}

	stopSrv()
	if err := env.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	stopped = true
	if err := env.Stop(); err != nil {
		t.Fatalf("Stop again: %v", err)
	}
	cs := kubernetes.NewForConfigOrDie(rest.CopyConfig(cfg))
	if _, err := cs.Discovery().ServerVersion(); err == nil {
		t.Fatal("the API server still answers after Stop")
	}
}

// TestAddUserIsAuthorizedAsThatUser proves a user AddUser provisions is
// held to RBAC: it cannot read Secrets, and asking to impersonate
// system:masters is refused rather than an escape.
func TestAddUserIsAuthorizedAsThatUser(t *testing.T) {
	assets(t)
	env := &envtest.Environment{}
	if _, err := env.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	admin := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := admin.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("the admin lists Secrets: %v", err)
	}
	user, err := env.AddUser(envtest.User{Name: "tenant", Groups: []string{"tenants"}}, &rest.Config{QPS: 50, Burst: 100})
	if err != nil {
		t.Fatalf("AddUser: %v", err)
	}
	cfg := user.Config()
	if cfg.QPS != 50 || cfg.Host != env.Config.Host {
		t.Fatalf("the user's config keeps the base config and the API server's address: QPS %v, host %q", cfg.QPS, cfg.Host)
	}
	_, err = kubernetes.NewForConfigOrDie(cfg).CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("tenant listing Secrets: want Forbidden, got %v", err)
	}
	if !strings.Contains(err.Error(), `"tenant"`) {
		t.Fatalf("the API server must see the user tenant: %v", err)
	}
	escalate := rest.CopyConfig(cfg)
	escalate.Impersonate = rest.ImpersonationConfig{UserName: "tenant", Groups: []string{"system:masters"}}
	_, err = kubernetes.NewForConfigOrDie(escalate).CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("tenant impersonating system:masters: want Forbidden, got %v", err)
	}
	review, err := kubernetes.NewForConfigOrDie(cfg).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectReview: %v", err)
	}
	if got := review.Status.UserInfo; got.Username != "tenant" || !slices.Contains(got.Groups, "tenants") {
		t.Fatalf("SelfSubjectReview says user %q in %v, want tenant in tenants", got.Username, got.Groups)
	}
}

// TestMissingBinariesSayWhatToRun checks the error a project without
// binaries gets: which binary, where it was looked for, and the command
// that builds it.
func TestMissingBinariesSayWhatToRun(t *testing.T) {
	tunedOnly(t)
	t.Setenv("KUBEBUILDER_ASSETS", filepath.Join(t.TempDir(), "nowhere"))
	_, err := (&envtest.Environment{}).Start()
	if err == nil {
		t.Fatal("Start without binaries succeeded")
	}
	for _, want := range []string{"not found", "nowhere", "KUBEBUILDER_ASSETS", "bins use"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
}

// TestStockIsControllerRuntimes runs the same Environment with
// KUBEHARNESS_ENVTEST=stock: controller-runtime's own start, which the
// drop-in must leave usable.
func TestStockIsControllerRuntimes(t *testing.T) {
	assets(t)
	t.Setenv(envtest.EnvStock, "stock")
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("testdata", "crd")}}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("stock Start: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	if env.ControlPlane.GetAPIServer().SecureServing.Authn == nil || env.ControlPlane.Etcd.DataDir == "" {
		t.Fatal("a stock start runs controller-runtime's control plane (its etcd data directory and authenticator)")
	}
	if _, err := kubernetes.NewForConfigOrDie(cfg).Discovery().ServerVersion(); err != nil {
		t.Fatalf("the stock API server: %v", err)
	}
}

// waitFor polls f every 50 ms until it returns nil or ctx ends.
func waitFor(ctx context.Context, f func() error) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-tick.C:
		}
	}
}
