package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/cmd/manager/app"
	"github.com/kubeharness/kubeharness/e2e/framework"
	"github.com/kubeharness/kubeharness/e2e/framework/binaries"
)

func runBench(ctx context.Context, args []string) error {
	fs := newFlagSet("bench", `bench [--starts N] [--suite-cmd CMD]

Starts the envtest control plane N times with the kubeharness-tuned settings
and N times with controller-runtime's stock settings, alternating, and
prints the median time from starting the processes until the API server
answers:

  envtest start: tuned 1.23s stock 3.10s ratio 0.40

With --suite-cmd it then runs that command (the e2e suite) and prints its
wall time.`)
	starts := fs.Int("starts", 7, "control-plane starts per setting (at least 5)")
	version := fs.String("version", os.Getenv("K8S_VERSION"), "Kubernetes version (default: $K8S_VERSION, then versions.yaml)")
	suiteCmd := fs.String("suite-cmd", "", "shell command that runs the e2e suite, timed after the start benchmark")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *starts < 5 {
		return fmt.Errorf("--starts=%d: a median needs at least 5 starts", *starts)
	}
	root, err := binaries.RepoRoot()
	if err != nil {
		return err
	}
	if *version == "" {
		lock, err := binaries.LoadLockfile(root)
		if err != nil {
			return err
		}
		*version = lock.Default
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

	ready, err := timeManagerReady(ctx, root, *version)
	if err != nil {
		return err
	}
	fmt.Printf("manager start to ready: %s (serving certificate through the CSR API, caBundle injected, canary admitted)\n", secs(ready))

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
	cp, err := framework.StartControlPlane(framework.ControlPlaneOptions{Root: root, Version: version, Stock: stock})
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

// timeManagerReady starts a tuned control plane with kubeharness installed,
// then measures from starting the manager (as its ServiceAccount) until a
// dry-run Playbook is admitted through the API server.
func timeManagerReady(ctx context.Context, root, version string) (time.Duration, error) {
	cp, err := framework.StartControlPlane(framework.ControlPlaneOptions{Root: root, Version: version, CRDs: true})
	if err != nil {
		return 0, err
	}
	defer cp.Stop()
	c, err := client.New(cp.Config, client.Options{Scheme: app.Scheme()})
	if err != nil {
		return 0, err
	}
	port, err := freePort()
	if err != nil {
		return 0, err
	}
	if err := framework.Install(ctx, c, framework.InstallOptions{
		Root: root, WebhookURL: fmt.Sprintf("https://127.0.0.1:%d", port), Scheme: app.Scheme(),
	}); err != nil {
		return 0, err
	}
	start := time.Now()
	mgr, err := app.New(framework.ImpersonateManager(cp.Config), framework.ManagerOptions(port))
	if err != nil {
		return 0, err
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	defer func() { cancel(); <-done }()
	if err := framework.WaitForWebhooks(ctx, c, done); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}
