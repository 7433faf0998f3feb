package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kubeharness/kubeharness/e2e/framework"
	"github.com/kubeharness/kubeharness/e2e/framework/binaries"
	"github.com/kubeharness/kubeharness/e2e/framework/controlplane"
	"github.com/kubeharness/kubeharness/internal/manager"
	"github.com/kubeharness/kubeharness/internal/testutil"
	appv1 "github.com/kubeharness/kubeharness/operator/api/app/v1"
	"github.com/kubeharness/kubeharness/webhook/certs"
	"github.com/kubeharness/kubeharness/webhook/sidecar"
)

// benchOptions are the flags of `kubeharness bench` (newBenchCommand).
type benchOptions struct {
	starts, appServices, pods int
	version, suiteCmd         string
}

// runBench is `kubeharness bench`.
func runBench(ctx context.Context, o *benchOptions) error {
	starts, version, suiteCmd, appServices, pods := &o.starts, &o.version, &o.suiteCmd, &o.appServices, &o.pods
	if *starts < 5 {
		return usageErrorf("--starts=%d: a median needs at least 5 starts", *starts)
	}
	root, err := binaries.RepoRoot()
	if err != nil {
		return err
	}
	req, err := versionRequest(*version, "")
	if err != nil {
		return err
	}
	res, err := newResolver(root)
	if err != nil {
		return err
	}
	if _, *version, err = res.Locate(ctx, root, req, binaries.DefaultComponents...); err != nil {
		return err
	}
	// One unmeasured start of each warms the page cache for the binaries.
	times := map[bool][]time.Duration{}
	for i := -1; i < *starts; i++ {
		for _, stock := range []bool{false, true} {
			if err := ctx.Err(); err != nil {
				return err
			}
			d, err := timeStart(root, *version, stock)
			if err != nil {
				return err
			}
			if i >= 0 {
				times[stock] = append(times[stock], d)
			}
		}
		if i >= 0 {
			fmt.Fprintf(os.Stderr, "  start %d/%d: tuned %s stock %s\n", i+1, *starts, secs(times[false][i]), secs(times[true][i]))
		}
	}
	tuned, stock := median(times[false]), median(times[true])
	fmt.Printf("envtest start: tuned %s stock %s ratio %.2f\n", secs(tuned), secs(stock), tuned.Seconds()/stock.Seconds())

	// The manager's log goes to a file: a benchmark prints figures.
	if err := os.MkdirAll(framework.ArtifactsDir(root), 0o755); err != nil {
		return err
	}
	logPath := filepath.Join(framework.ArtifactsDir(root), "bench-manager.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	ctrl.SetLogger(zap.New(zap.WriteTo(logFile)))
	env, err := startBenchEnv(ctx, root, *version)
	if err != nil {
		return err
	}
	defer func() { _ = env.Stop() }()
	fmt.Printf("manager start to ready: %s (serving certificate through the CSR API, caBundle injected, canary admitted)\n", secs(env.ManagerReady))
	if err := benchAppServices(ctx, env, *appServices); err != nil {
		return err
	}
	if err := benchInjector(ctx, env, *pods); err != nil {
		return err
	}

	if *suiteCmd == "" {
		return nil
	}
	start := time.Now()
	cmd := exec.CommandContext(ctx, "bash", "-c", *suiteCmd)
	cmd.Stdout, cmd.Stderr, cmd.Dir = os.Stderr, os.Stderr, root
	err = cmd.Run()
	result := "passed"
	if err != nil {
		result = "failed: " + err.Error()
	}
	fmt.Printf("e2e suite: %s wall (%s)\n", secs(time.Since(start)), result)
	return err
}

// timeStart measures one control-plane start, from launching etcd until
// kube-apiserver answers its health check.
func timeStart(root, version string, stock bool) (time.Duration, error) {
	start := time.Now()
	cp, err := controlplane.Start(controlplane.Options{Root: root, Version: version, Stock: stock})
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	return d, cp.Stop()
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }

// benchEnv is a tuned control plane with kubeharness installed and the
// manager running in this process as its ServiceAccount, brought up as the
// suite brings up its own (framework.StartLocal), without
// kube-controller-manager.
type benchEnv struct {
	*framework.LocalEnv
	c           client.Client
	webhookAddr string
}

// startBenchEnv starts the environment; its ManagerReady measures from
// starting the manager until a dry-run Playbook is admitted through the
// API server.
func startBenchEnv(ctx context.Context, root, version string) (*benchEnv, error) {
	env, err := framework.StartLocal(ctx, framework.LocalOptions{
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
	ns, err := framework.CreateNamespace(ctx, env.c, "bench-appservices")
	if err != nil {
		return err
	}
	start := time.Now()
	jobs := make(chan int)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				a := testutil.MakeAppService(fmt.Sprintf("app-%04d", i), ns, "nginx:1.27").Obj()
				if err := env.c.Create(ctx, a); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errs:
		return fmt.Errorf("creating AppServices: %w", err)
	default:
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
	with, err := framework.CreateNamespace(ctx, env.c, "bench-injected", map[string]string{"kubeharness.dev/sidecar-injection": "enabled"})
	if err != nil {
		return err
	}
	without, err := framework.CreateNamespace(ctx, env.c, "bench-plain")
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

func percentile(ds []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, (len(s)*p+99)/100-1)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000) }
