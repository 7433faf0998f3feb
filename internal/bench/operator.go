package bench

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/harness/versions"
	"github.com/kubeharness/kubeharness/internal/manager"
	"github.com/kubeharness/kubeharness/internal/operatortest"
	"github.com/kubeharness/kubeharness/internal/testutil"
	appv1 "github.com/kubeharness/kubeharness/operator/api/app/v1"
	"github.com/kubeharness/kubeharness/operator/certs"
	"github.com/kubeharness/kubeharness/webhook/sidecar"
)

// benchEnv is a tuned control plane with kubeharness installed and the
// manager running in this process as its ServiceAccount, brought up as the
// suite brings up its own (operatortest.StartLocal), without
// kube-controller-manager.
type benchEnv struct {
	*operatortest.LocalEnv
	c           client.Client
	webhookAddr string
}

// startBenchEnv starts the environment; its ManagerReady measures from
// starting the manager until a dry-run Playbook is admitted through the
// API server.
func startBenchEnv(ctx context.Context, root string, version versions.Version) (*benchEnv, error) {
	env, err := operatortest.StartLocal(ctx, operatortest.LocalOptions{
		Root: root, Version: version,
		Manager: func(o *manager.Options) { o.AppServiceWorkers = 8 },
	})
	if err != nil {
		return nil, err
	}
	return &benchEnv{LocalEnv: env, c: env.Client, webhookAddr: fmt.Sprintf("127.0.0.1:%d", env.WebhookPort)}, nil
}

// benchAppServices creates n AppServices at once and measures until every
// one has its Deployment and Service and a status for its generation.
func benchAppServices(ctx context.Context, env *benchEnv, n int) error {
	if n == 0 {
		fmt.Println("AppServices: skipped (--appservices=0)")
		return nil
	}
	ns, err := operatortest.CreateNamespace(ctx, env.c, "bench-appservices")
	if err != nil {
		return err
	}
	start := time.Now()
	if err := concurrently(n, 16, func(i int) error {
		return env.c.Create(ctx, testutil.MakeAppService(fmt.Sprintf("app-%04d", i), ns, "nginx:1.27").Obj())
	}); err != nil {
		return fmt.Errorf("creating AppServices: %w", err)
	}
	created := time.Since(start)
	for {
		converged, err := convergedAppServices(ctx, env.c, ns)
		if err != nil {
			return err
		}
		if converged >= n {
			break
		}
		if time.Since(start) > 5*time.Minute {
			return fmt.Errorf("only %d of %d AppServices converged after 5m; see the manager's log", converged, n)
		}
		time.Sleep(50 * time.Millisecond) // polling a benchmark's progress, not a spec's state
	}
	d := time.Since(start)
	fmt.Printf("appservices: %d converged in %s (%.0f/s; created in %s)\n", n, secs(d), float64(n)/d.Seconds(), secs(created))
	return nil
}

func convergedAppServices(ctx context.Context, c client.Client, ns string) (int, error) {
	apps := &appv1.AppServiceList{}
	deploys := &appsv1.DeploymentList{}
	svcs := &corev1.ServiceList{}
	for _, l := range []client.ObjectList{apps, deploys, svcs} {
		if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
			return 0, err
		}
	}
	have := map[string]int{}
	for _, d := range deploys.Items {
		have[d.Name]++
	}
	for _, s := range svcs.Items {
		have[s.Name]++
	}
	n := 0
	for _, a := range apps.Items {
		if have[a.Name] == 2 && a.Status.ObservedGeneration == a.Generation {
			n++
		}
	}
	return n, nil
}

// benchInjector creates Pods one by one through the API server in a
// namespace with the sidecar injector on and in one without, and prints the
// latency percentiles of both.
func benchInjector(ctx context.Context, env *benchEnv, n int) error {
	if n == 0 {
		fmt.Println("sidecar injector: skipped (--pods=0)")
		return nil
	}
	with, err := operatortest.CreateNamespace(ctx, env.c, "bench-injected", map[string]string{"kubeharness.dev/sidecar-injection": "enabled"})
	if err != nil {
		return err
	}
	without, err := operatortest.CreateNamespace(ctx, env.c, "bench-plain")
	if err != nil {
		return err
	}
	measure := func(ns string) ([]time.Duration, error) {
		lat := make([]time.Duration, 0, n)
		for i := range n {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%04d", i), Namespace: ns},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:v1"}}},
			}
			t := time.Now()
			if err := env.c.Create(ctx, pod); err != nil {
				return nil, fmt.Errorf("creating Pod %s/%s: %w", ns, pod.Name, err)
			}
			lat = append(lat, time.Since(t))
		}
		return lat, nil
	}
	plain, err := measure(without)
	if err != nil {
		return err
	}
	injected, err := measure(with)
	if err != nil {
		return err
	}
	fmt.Printf("pod create through the API server: with injector p50 %s p99 %s; without p50 %s p99 %s (%d each)\n",
		ms(percentile(injected, 50)), ms(percentile(injected, 99)), ms(percentile(plain, 50)), ms(percentile(plain, 99)), n)

	direct, err := benchInjectorDirect(ctx, env, with, 4*n)
	if err != nil {
		return err
	}
	fmt.Printf("sidecar injector admission (AdmissionReview over HTTPS, as the API server calls it): p50 %s p99 %s (%d requests)\n",
		ms(percentile(direct, 50)), ms(percentile(direct, 99)), len(direct))
	return nil
}

// benchInjectorDirect sends Pod CREATE AdmissionReviews to the injector the
// way the API server does (HTTPS, keep-alive, trusting the injected CA) and
// times each answer: the injector's own admission latency.
func benchInjectorDirect(ctx context.Context, env *benchEnv, ns string, n int) ([]time.Duration, error) {
	caSecret := &corev1.Secret{}
	if err := env.c.Get(ctx, client.ObjectKey{Namespace: certs.DefaultNamespace, Name: certs.CASecretName}, caSecret); err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caSecret.Data["ca.crt"]) {
		return nil, fmt.Errorf("CA Secret holds no CA bundle")
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}}, Timeout: 10 * time.Second}
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-", Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:v1"}}},
	}
	raw, err := json.Marshal(pod)
	if err != nil {
		return nil, err
	}
	lat := make([]time.Duration, 0, n)
	for i := range n {
		review := admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{
				UID:       types.UID(fmt.Sprintf("bench-%d", i)),
				Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
				Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
				Namespace: ns, Operation: admissionv1.Create,
				Object: runtime.RawExtension{Raw: raw},
			},
		}
		body, err := json.Marshal(review)
		if err != nil {
			return nil, err
		}
		t := time.Now()
		resp, err := hc.Post("https://"+env.webhookAddr+sidecar.Path, "application/json", bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		out := admissionv1.AdmissionReview{}
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		lat = append(lat, time.Since(t))
		if err != nil || out.Response == nil || !out.Response.Allowed || len(out.Response.Patch) == 0 {
			return nil, fmt.Errorf("the injector did not inject (response %+v, %v)", out.Response, err)
		}
	}
	return lat, nil
}
