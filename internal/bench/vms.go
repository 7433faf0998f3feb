package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	dockerclient "github.com/moby/moby/client"
	"go.uber.org/zap/zapcore"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kubeharness/kubeharness/internal/operatortest"
	"github.com/kubeharness/kubeharness/internal/vmcontroller"
	"github.com/kubeharness/kubeharness/internal/vmfixture"
	cloudv1 "github.com/kubeharness/kubeharness/operator/api/cloudnative/v1alpha1"
	"github.com/kubeharness/kubeharness/operator/vm/driver"
	vmclientset "github.com/kubeharness/kubeharness/operator/vm/generated/clientset/versioned"
	vmtyped "github.com/kubeharness/kubeharness/operator/vm/generated/clientset/versioned/typed/cloudnative/v1alpha1"
)

// benchVMs measures the VirtualMachine controller (run in this process as
// its ServiceAccount, operatortest.StartVMController): fakeN VirtualMachines
// with the fake driver, then dockerN with the docker driver when a Docker
// daemon answers (a note says why not otherwise). 0 skips either.
func benchVMs(ctx context.Context, root string, env *benchEnv, fakeN, dockerN int) error {
	if fakeN == 0 && dockerN == 0 {
		return nil
	}
	logPath := filepath.Join(operatortest.ArtifactsDir(root), "bench-vm-controller.log")
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
	// EnsureVMImage asks the daemon first: no daemon skips the driver.
	err = vmfixture.EnsureVMImage(ctx, root, os.Stderr)
	switch {
	case errors.Is(err, vmfixture.ErrNoDockerDaemon):
		fmt.Printf("VirtualMachines: the docker driver skipped: %v\n", err)
		return nil
	case err != nil:
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
		if docker, err = vmfixture.NewDockerClient(); err != nil {
			return r, err
		}
		defer docker.Close()
	}
	ns, err := operatortest.CreateNamespace(ctx, env.c, "bench-vms-"+name)
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
	o.Controller.DefaultImage = vmfixture.VMImage
	run := operatortest.StartVMController(env.ControlPlane, o, log.WithName(name))
	defer func() { _ = run.Stop(operatortest.ManagerStopTimeout) }()
	// Timed from a controller that has its cache and has made a server.
	if err := benchVMWarmUp(ctx, vms, name); err != nil {
		return r, err
	}

	start := time.Now()
	if err := concurrently(n, 16, func(i int) error {
		_, err := vms.Create(ctx, benchVM(fmt.Sprintf("vm-%04d", i)), metav1.CreateOptions{})
		return err
	}); err != nil {
		return r, fmt.Errorf("creating VirtualMachines: %w", err)
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
