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
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	dockerclient "github.com/moby/moby/client"
	"go.uber.org/zap/zapcore"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kubeharness/kubeharness/harness/binaries"
	"github.com/kubeharness/kubeharness/harness/controlplane"
	"github.com/kubeharness/kubeharness/harness/versions"
	"github.com/kubeharness/kubeharness/internal/manager"
	"github.com/kubeharness/kubeharness/internal/testenv"
	"github.com/kubeharness/kubeharness/internal/testutil"
	"github.com/kubeharness/kubeharness/internal/vmcontroller"
	appv1 "github.com/kubeharness/kubeharness/operator/api/app/v1"
	cloudv1 "github.com/kubeharness/kubeharness/operator/api/cloudnative/v1alpha1"
	"github.com/kubeharness/kubeharness/operator/certs"
	"github.com/kubeharness/kubeharness/operator/vm/driver"
	vmclientset "github.com/kubeharness/kubeharness/operator/vm/generated/clientset/versioned"
	vmtyped "github.com/kubeharness/kubeharness/operator/vm/generated/clientset/versioned/typed/cloudnative/v1alpha1"
	"github.com/kubeharness/kubeharness/webhook/sidecar"
)

// benchOptions are the flags of `kubeharness bench` (newBenchCommand).
type benchOptions struct {
	starts, appServices, pods int
	// vms and dockerVMs are how many VirtualMachines the fake and the
	// docker driver are measured with; 0 skips.
	vms, dockerVMs    int
	version, suiteCmd string
	// cycles is how many start/stop cycles benchCycles checks; 0 skips.
	cycles int
	// only is --only: the sections to run (parseBenchOnly).
	only string
	// leaderKills is how many leaders benchLeaderFailover kills; 0 skips.
	leaderKills int
	// suiteProcs is how many Ginkgo processes the parallel suite runs
	// use; suiteRuns how many parallel runs count failures.
	suiteProcs, suiteRuns int
	// exampleCmd runs an example project's suites; exampleRuns is how many
	// times in each setting.
	exampleCmd  string
	exampleRuns int
}

// runBench is `kubeharness bench`.
func runBench(ctx context.Context, o *benchOptions) error {
	starts, suiteCmd, appServices, pods := &o.starts, &o.suiteCmd, &o.appServices, &o.pods
	if *starts < 5 {
		return usageErrorf("--starts=%d: a median needs at least 5 starts", *starts)
	}
	if *appServices < 0 || *pods < 0 {
		return usageErrorf("--appservices=%d --pods=%d: a count, 0 to skip", *appServices, *pods)
	}
	if o.vms < 0 || o.dockerVMs < 0 {
		return usageErrorf("--vms=%d --docker-vms=%d: a count of VirtualMachines, 0 to skip", o.vms, o.dockerVMs)
	}
	if o.cycles < 0 {
		return usageErrorf("--cycles=%d: a count of start/stop cycles, 0 to skip", o.cycles)
	}
	if o.leaderKills < 0 {
		return usageErrorf("--leader-kills=%d: a count of leaders to kill, 0 to skip", o.leaderKills)
	}
	run, err := parseBenchOnly(o.only)
	if err != nil {
		return err
	}
	if run["example"] && o.exampleCmd != "" && o.exampleRuns < 1 {
		return usageErrorf("--example-runs=%d: at least 1", o.exampleRuns)
	}
	if run["suite"] && o.suiteCmd != "" && (o.suiteProcs < 2 || o.suiteRuns < 1) {
		return usageErrorf("--suite-procs=%d --suite-runs=%d: the suite section needs at least 2 processes and 1 run", o.suiteProcs, o.suiteRuns)
	}
	root, err := binaries.RepoRoot()
	if err != nil {
		return err
	}
	req, err := versionRequest(o.version, "")
	if err != nil {
		return err
	}
	res, err := newResolver(root)
	if err != nil {
		return err
	}
	_, version, err := binaries.Locate(ctx, res, root, req, binaries.DefaultComponents...)
	if err != nil {
		return err
	}
	if run["start"] {
		// Tuned starts run kube-apiserver-test when it was built; they are
		// timed with the stock kube-apiserver too, to show what it saves.
		settings := []startSetting{{name: "tuned"}, {name: "stock", stock: true}}
		dir, err := binaries.Find(root, version)
		if err != nil {
			return err
		}
		if controlplane.APIServerBinary(dir, controlplane.Options{}) != binaries.KubeAPIServer.Name {
			settings = append(settings, startSetting{name: "tuned-stock-apiserver", stockAPIServer: true})
		}
		// One unmeasured start of each warms the page cache for the binaries.
		times := map[string][]time.Duration{}
		var phases []controlplane.StartTimes
		for i := -1; i < *starts; i++ {
			for _, s := range settings {
				if err := ctx.Err(); err != nil {
					return err
				}
				d, st, err := timeStart(root, version, s)
				if err != nil {
					return err
				}
				if i >= 0 {
					times[s.name] = append(times[s.name], d)
					if s.name == "tuned" {
						phases = append(phases, st)
					}
				}
			}
			if i >= 0 {
				fmt.Fprintf(os.Stderr, "  start %d/%d:", i+1, *starts)
				for _, s := range settings {
					fmt.Fprintf(os.Stderr, " %s %s", s.name, secs(times[s.name][i]))
				}
				fmt.Fprintln(os.Stderr)
			}
		}
		tuned, stock := median(times["tuned"]), median(times["stock"])
		fmt.Printf("envtest start: tuned %s stock %s ratio %.2f\n", secs(tuned), secs(stock), tuned.Seconds()/stock.Seconds())
		fmt.Printf("  tuned start, medians: %s\n", medianStartTimes(phases))
		if ts := times["tuned-stock-apiserver"]; len(ts) > 0 {
			d := median(ts)
			fmt.Printf("  tuned with the stock kube-apiserver: %s ratio %.2f\n", secs(d), d.Seconds()/stock.Seconds())
		}
	}
	if run["cycles"] {
		if err := benchCycles(ctx, root, version, o.cycles); err != nil {
			return err
		}
	}

	if run["env"] {
		// The manager's log goes to a file: a benchmark prints figures.
		if err := os.MkdirAll(testenv.ArtifactsDir(root), 0o755); err != nil {
			return err
		}
		logPath := filepath.Join(testenv.ArtifactsDir(root), "bench-manager.log")
		logFile, err := os.Create(logPath)
		if err != nil {
			return err
		}
		defer logFile.Close()
		ctrl.SetLogger(zap.New(zap.WriteTo(logFile)))
		env, err := startBenchEnv(ctx, root, version)
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
		if err := benchVMs(ctx, root, env, o.vms, o.dockerVMs); err != nil {
			return err
		}
	}

	if run["leader"] {
		if err := benchLeaderFailover(ctx, root, version, o.leaderKills); err != nil {
			return err
		}
	}

	if run["suite"] && *suiteCmd != "" {
		if err := benchSuite(ctx, *suiteCmd, o.suiteProcs, o.suiteRuns); err != nil {
			return err
		}
	}
	if run["example"] && o.exampleCmd != "" {
		return benchExample(ctx, o.exampleCmd, o.suiteProcs, o.exampleRuns)
	}
	return nil
}

// startSetting is one way bench starts a control plane: tuned (with the
// stock kube-apiserver when stockAPIServer) or stock.
type startSetting struct {
	name                  string
	stock, stockAPIServer bool
}

// timeStart measures one control-plane start, from launching etcd until
// kube-apiserver answers its health check, and says where a tuned start
// spent its time.
func timeStart(root string, version versions.Version, s startSetting) (time.Duration, controlplane.StartTimes, error) {
	start := time.Now()
	cp, err := controlplane.Start(controlplane.Options{Root: root, Version: version, Stock: s.stock, StockAPIServer: s.stockAPIServer})
	d := time.Since(start)
	if err != nil {
		return 0, controlplane.StartTimes{}, err
	}
	return d, cp.Times, cp.Stop()
}

// medianStartTimes is each phase's median over starts, with the readiness
// checks that were most often the last to pass.
func medianStartTimes(ts []controlplane.StartTimes) controlplane.StartTimes {
	pick := func(f func(controlplane.StartTimes) time.Duration) time.Duration {
		ds := make([]time.Duration, len(ts))
		for i, t := range ts {
			ds[i] = f(t)
		}
		return median(ds)
	}
	counts := map[string]int{}
	for _, t := range ts {
		for _, c := range t.LastChecks {
			counts[c]++
		}
	}
	var last []string
	for c, n := range counts {
		last = append(last, fmt.Sprintf("%s %d/%d", c, n, len(ts)))
	}
	sort.Strings(last)
	return controlplane.StartTimes{
		Template:         pick(func(t controlplane.StartTimes) time.Duration { return t.Template }),
		Etcd:             pick(func(t controlplane.StartTimes) time.Duration { return t.Etcd }),
		PKI:              pick(func(t controlplane.StartTimes) time.Duration { return t.PKI }),
		APIServerServing: pick(func(t controlplane.StartTimes) time.Duration { return t.APIServerServing }),
		APIServerReady:   pick(func(t controlplane.StartTimes) time.Duration { return t.APIServerReady }),
		LastChecks:       last,
		APIServer:        ts[0].APIServer,
	}
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
// suite brings up its own (testenv.StartLocal), without
// kube-controller-manager.
type benchEnv struct {
	*testenv.LocalEnv
	c           client.Client
	webhookAddr string
}

// startBenchEnv starts the environment; its ManagerReady measures from
// starting the manager until a dry-run Playbook is admitted through the
// API server.
func startBenchEnv(ctx context.Context, root string, version versions.Version) (*benchEnv, error) {
	env, err := testenv.StartLocal(ctx, testenv.LocalOptions{
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
	ns, err := testenv.CreateNamespace(ctx, env.c, "bench-appservices")
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
	if n == 0 {
		fmt.Println("sidecar injector: skipped (--pods=0)")
		return nil
	}
	with, err := testenv.CreateNamespace(ctx, env.c, "bench-injected", map[string]string{"kubeharness.dev/sidecar-injection": "enabled"})
	if err != nil {
		return err
	}
	without, err := testenv.CreateNamespace(ctx, env.c, "bench-plain")
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

// benchVMs measures the VirtualMachine controller (run in this process as
// its ServiceAccount, testenv.StartVMController): fakeN VirtualMachines
// with the fake driver, then dockerN with the docker driver when a Docker
// daemon answers (a note says why not otherwise). 0 skips either.
func benchVMs(ctx context.Context, root string, env *benchEnv, fakeN, dockerN int) error {
	if fakeN == 0 && dockerN == 0 {
		return nil
	}
	logPath := filepath.Join(testenv.ArtifactsDir(root), "bench-vm-controller.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	log := zap.New(zap.WriteTo(logFile), func(o *zap.Options) { o.TimeEncoder = zapcore.RFC3339NanoTimeEncoder })
	if fakeN > 0 {
		fake := driver.NewFake()
		r, err := benchVMDriver(ctx, env, driver.FakeDriverName, fakeN, func() (driver.Driver, error) { return fake, nil }, log)
		if err != nil {
			return fmt.Errorf("%w (the controller's log: %s)", err, logPath)
		}
		r.print()
	}
	if dockerN == 0 {
		return nil
	}
	if err := testenv.PingDocker(ctx); err != nil {
		fmt.Printf("VirtualMachines: the docker driver skipped: %v\n", err)
		return nil
	}
	if err := testenv.EnsureVMImage(ctx, root, os.Stderr); err != nil {
		return err
	}
	r, err := benchVMDriver(ctx, env, driver.DockerDriverName, dockerN, nil, log)
	if err != nil {
		return fmt.Errorf("%w (the controller's log: %s)", err, logPath)
	}
	r.print()
	return nil
}

// vmBenchResult is one driver's run of benchVMDriver.
type vmBenchResult struct {
	driver string
	n      int
	// created: every create answered; active: every VirtualMachine Active;
	// gone: from the deletion until none is left (and, for docker, no
	// container of theirs); all from the first create or the deletion.
	created, active, gone time.Duration
}

func (r vmBenchResult) print() {
	fmt.Printf("VirtualMachines: %d with the %s driver converged to Active in %s (%.1f/s; created in %s; deleted, servers removed, in %s)\n",
		r.n, r.driver, secs(r.active), float64(r.n)/r.active.Seconds(), secs(r.created), secs(r.gone))
}

// benchVMTimeout bounds each wait of benchVMDriver.
const benchVMTimeout = 5 * time.Minute

// benchVMDriver runs the VirtualMachine controller with the driver named
// (newDriver, when set, makes it), creates n VirtualMachines at once through
// the generated clientset, waits until every one is Active, deletes them all
// and waits until they are gone, and with them, for docker, their
// containers. It stops the controller before it returns.
func benchVMDriver(ctx context.Context, env *benchEnv, name string, n int, newDriver func() (driver.Driver, error), log logr.Logger) (vmBenchResult, error) {
	r := vmBenchResult{driver: name, n: n}
	var docker *dockerclient.Client
	if name == driver.DockerDriverName {
		var err error
		if docker, err = testenv.NewDockerClient(); err != nil {
			return r, err
		}
		defer docker.Close()
	}
	ns, err := testenv.CreateNamespace(ctx, env.c, "bench-vms-"+name)
	if err != nil {
		return r, err
	}
	cfg := rest.CopyConfig(env.ControlPlane.Config)
	cfg.QPS, cfg.Burst = 500, 1000
	cs, err := vmclientset.NewForConfig(cfg)
	if err != nil {
		return r, err
	}
	vms := cs.CloudnativeV1alpha1().VirtualMachines(ns)

	o := vmcontroller.DefaultOptions()
	o.Driver, o.NewDriver = name, newDriver
	o.ProbeAddr = "0"
	o.Workers = 8
	o.KubeAPIQPS, o.KubeAPIBurst = 500, 1000
	o.Controller.DefaultImage = testenv.VMImage
	run := testenv.StartVMController(env.ControlPlane, o, log.WithName(name))
	defer func() { _ = run.Stop(testenv.ManagerStopTimeout) }()
	// Timed from a controller that has its cache and has made a server.
	if err := benchVMWarmUp(ctx, vms, name); err != nil {
		return r, err
	}

	start := time.Now()
	jobs := make(chan int)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range jobs {
				if _, err := vms.Create(ctx, benchVM(fmt.Sprintf("vm-%04d", i)), metav1.CreateOptions{}); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errs:
		return r, fmt.Errorf("creating VirtualMachines: %w", err)
	default:
	}
	r.created = time.Since(start)

	for {
		list, err := vms.List(ctx, metav1.ListOptions{})
		if err != nil {
			return r, err
		}
		phases := map[cloudv1.VirtualMachinePhase]int{}
		reason := ""
		for _, vm := range list.Items {
			phases[vm.Status.Phase]++
			if vm.Status.Phase == cloudv1.VirtualMachineFailed && reason == "" {
				reason = vm.Name + ": " + vm.Status.Reason
			}
		}
		if phases[cloudv1.VirtualMachineActive] == n {
			break
		}
		if time.Since(start) > benchVMTimeout {
			return r, fmt.Errorf("only %d of %d VirtualMachines with the %s driver were Active after %s (phases %v; %s)",
				phases[cloudv1.VirtualMachineActive], n, name, benchVMTimeout, phases, reason)
		}
		if err := pause(ctx); err != nil {
			return r, err
		}
	}
	r.active = time.Since(start)

	start = time.Now()
	if err := vms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return r, fmt.Errorf("deleting VirtualMachines: %w", err)
	}
	for {
		list, err := vms.List(ctx, metav1.ListOptions{})
		if err != nil {
			return r, err
		}
		left := len(list.Items)
		if docker != nil && left == 0 {
			res, err := docker.ContainerList(ctx, dockerclient.ContainerListOptions{All: true,
				Filters: make(dockerclient.Filters).Add("label", driver.LabelManagedBy+"="+driver.ManagedBy, driver.LabelNamespace+"="+ns)})
			if err != nil {
				return r, err
			}
			left = len(res.Items)
		}
		if left == 0 {
			break
		}
		if time.Since(start) > benchVMTimeout {
			return r, fmt.Errorf("%d VirtualMachines (or their containers) with the %s driver were left %s after their deletion", left, name, benchVMTimeout)
		}
		if err := pause(ctx); err != nil {
			return r, err
		}
	}
	r.gone = time.Since(start)
	return r, nil
}

// benchVM is a VirtualMachine of the benchmark: 100m CPU, 32Mi memory, the
// controller's default image.
func benchVM(name string) *cloudv1.VirtualMachine {
	return &cloudv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: cloudv1.VirtualMachineSpec{Resource: cloudv1.VirtualMachineResource{
			CPU: resource.MustParse("100m"), Memory: resource.MustParse("32Mi"),
		}},
	}
}

// benchVMWarmUp creates one VirtualMachine, waits until it is Active,
// deletes it and waits until it is gone: the controller then has its
// informer's cache and the driver has answered.
func benchVMWarmUp(ctx context.Context, vms vmtyped.VirtualMachineInterface, driverName string) error {
	const name = "warm-up"
	if _, err := vms.Create(ctx, benchVM(name), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the warm-up VirtualMachine: %w", err)
	}
	deleted := false
	for start := time.Now(); ; {
		vm, err := vms.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) && deleted:
			return nil
		case err != nil:
			return err
		case !deleted && vm.Status.Phase == cloudv1.VirtualMachineActive:
			if err := vms.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				return err
			}
			deleted = true
		}
		if time.Since(start) > benchVMTimeout {
			return fmt.Errorf("the warm-up VirtualMachine with the %s driver is still %s after %s: %s", driverName, vm.Status.Phase, benchVMTimeout, vm.Status.Reason)
		}
		if err := pause(ctx); err != nil {
			return err
		}
	}
}

// pause waits a little between two looks at a benchmark's progress.
func pause(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(50 * time.Millisecond):
		return nil
	}
}

func percentile(ds []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, (len(s)*p+99)/100-1)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000) }
