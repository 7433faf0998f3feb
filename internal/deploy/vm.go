package deploy

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/internal/vmcontroller"
	"github.com/kubeharness/kubeharness/internal/vmfixture"
	"github.com/kubeharness/kubeharness/operator/certs"
	"github.com/kubeharness/kubeharness/operator/vm"
)

// The deployed VirtualMachine controller (config/vm).
const (
	// VMConfig is the kustomization of the controller's RBAC, namespace and
	// Deployment.
	VMConfig = "config/vm"
	// VMNamespace is the controller's namespace: its ServiceAccount, Lease,
	// Deployment and Docker credentials are there, apart from the manager's
	// namespace, so that no ServiceAccount of config/ can read the
	// credentials (a Pod mounts Secrets of its own namespace only).
	VMNamespace = vmcontroller.DefaultNamespace
	// VMControllerDeployment and VMControllerContainer name its Deployment
	// and container.
	VMControllerDeployment = "kubeharness-vm-controller"
	VMControllerContainer  = "vm-controller"
	// VMDockerCertsSecret, in VMNamespace, holds the Docker client
	// certificate it mounts at DOCKER_CERT_PATH.
	VMDockerCertsSecret = "kubeharness-vm-docker-certs"
	// VMDockerCertsPath is where the Deployment mounts it.
	VMDockerCertsPath = "/etc/docker-certs"
	// VMControllerImage is the repository of the image the harness builds.
	VMControllerImage = "kubeharness/vm-controller"
	// DockerHostName is the name the controller reaches the Docker daemon
	// by; its serving certificate carries it (hack/dockertls), and the
	// Deployment maps it to the daemon's address with a hostAlias.
	DockerHostName = "docker-host.kubeharness"
	// DockerTLSDirEnv names the directory of hack/dockertls's material
	// (default DefaultDockerTLSDir); make docker-up writes it.
	DockerTLSDirEnv     = "DOCKER_TLS_DIR"
	DefaultDockerTLSDir = "/etc/kubeharness/docker-tls"
)

// DockerTLSDir is where make docker-up put the Docker TLS material.
func DockerTLSDir() string {
	if d := os.Getenv(DockerTLSDirEnv); d != "" {
		return d
	}
	return DefaultDockerTLSDir
}

// VMDeployOptions say how the VirtualMachine controller is deployed.
type VMDeployOptions struct {
	Root string
	// Image is the controller's image, loaded into the nodes.
	Image string
	// DockerIP is the address of the Docker daemon as the Pods reach it.
	DockerIP string
	// ClientCertDir holds ca.pem, cert.pem and key.pem for the Secret.
	ClientCertDir string
	// Args are added to the controller's command line.
	Args []string
	Out  io.Writer
}

// DeployVMController server-side applies config/vm with the image, the
// daemon's address and the default image set: its namespace first, then
// the Secret with the Docker client certificate in it, then the rest; it
// then waits for the rollout.
func DeployVMController(ctx context.Context, c client.Client, o VMDeployOptions) error {
	out := o.Out
	if out == nil {
		out = io.Discard
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: VMDockerCertsSecret, Namespace: VMNamespace},
		Data:       map[string][]byte{},
	}
	for _, f := range []string{"ca.pem", "cert.pem", "key.pem"} {
		data, err := os.ReadFile(filepath.Join(o.ClientCertDir, f))
		if err != nil {
			return fmt.Errorf("the Docker client certificate: %w (make docker-up writes it)", err)
		}
		secret.Data[f] = data
	}

	objs, err := Render(o.Root, VMConfig)
	if err != nil {
		return err
	}
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int { return applyRank(a) - applyRank(b) })
	found := false
	for _, u := range objs {
		if u.GetKind() == "Deployment" && u.GetName() == VMControllerDeployment {
			if err := configureVMDeployment(u, o); err != nil {
				return err
			}
			found = true
		}
	}
	if !found {
		return fmt.Errorf("%s renders no Deployment %s", VMConfig, VMControllerDeployment)
	}
	secretDone := false
	for _, u := range objs {
		if !secretDone && u.GetKind() != "Namespace" {
			if err := putSecret(ctx, c, secret); err != nil {
				return err
			}
			secretDone = true
		}
		changed, err := apply(ctx, c, u)
		if err != nil {
			return fmt.Errorf("applying %s %s from %s: %w", u.GetKind(), u.GetName(), VMConfig, err)
		}
		if changed {
			fmt.Fprintf(out, "%s/%s configured\n", u.GetKind(), u.GetName())
		}
	}
	if !secretDone {
		if err := putSecret(ctx, c, secret); err != nil {
			return err
		}
	}
	if err := removeFormerVMController(ctx, c, out); err != nil {
		return err
	}
	return WaitForDeployment(ctx, c, types.NamespacedName{Namespace: VMNamespace, Name: VMControllerDeployment})
}

// putSecret creates secret or replaces the data of the one there.
func putSecret(ctx context.Context, c client.Client, secret *corev1.Secret) error {
	err := c.Create(ctx, secret)
	if apierrors.IsAlreadyExists(err) {
		cur := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(secret), cur); err != nil {
			return err
		}
		cur.Data = secret.Data
		if err := c.Update(ctx, cur); err != nil {
			return fmt.Errorf("updating Secret %s/%s: %w", secret.Namespace, secret.Name, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating Secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	return nil
}

// removeFormerVMController deletes what config/vm deployed into the
// manager's namespace when the controller lived there: the Docker
// credentials the manager could read there, and a Deployment that would
// elect a leader of its own on its own Lease and sync VirtualMachines
// beside the one in VMNamespace.
func removeFormerVMController(ctx context.Context, c client.Client, out io.Writer) error {
	for _, obj := range []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: certs.DefaultNamespace, Name: VMControllerDeployment}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: certs.DefaultNamespace, Name: VMDockerCertsSecret}},
	} {
		err := c.Delete(ctx, obj, client.PropagationPolicy("Background"))
		if err == nil {
			fmt.Fprintf(out, "removed %T %s/%s from the manager's namespace (the VirtualMachine controller lives in %s)\n", obj, obj.GetNamespace(), obj.GetName(), VMNamespace)
		} else if !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing the VirtualMachine controller's former %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return nil
}

// UndeployVMController deletes what config/vm creates, its namespace (and
// so the Docker credentials in it) last.
func UndeployVMController(ctx context.Context, c client.Client, root string, out io.Writer) error {
	return undeployConfig(ctx, c, root, VMConfig, out)
}

// configureVMDeployment sets the image, the hostAlias of DockerHostName and
// the extra arguments on the rendered Deployment u.
func configureVMDeployment(u *unstructured.Unstructured, o VMDeployOptions) error {
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d); err != nil {
		return err
	}
	d.Spec.Template.Spec.HostAliases = []corev1.HostAlias{{IP: o.DockerIP, Hostnames: []string{DockerHostName}}}
	set := false
	for i := range d.Spec.Template.Spec.Containers {
		ctr := &d.Spec.Template.Spec.Containers[i]
		if ctr.Name != VMControllerContainer {
			continue
		}
		ctr.Image, ctr.ImagePullPolicy = o.Image, corev1.PullIfNotPresent
		ctr.Args = append(ctr.Args, o.Args...)
		set = true
	}
	if !set {
		return fmt.Errorf("the Deployment %s has no container %q", VMControllerDeployment, VMControllerContainer)
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
	if err != nil {
		return err
	}
	// Drop the empty status and creationTimestamp the conversion adds: an
	// apply must not claim them.
	delete(obj, "status")
	unstructured.RemoveNestedField(obj, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(obj, "spec", "template", "metadata", "creationTimestamp")
	u.Object = obj
	return nil
}

// KindDockerGateway is the address of the host's Docker daemon as Pods of
// the kind cluster reach it: the gateway of the kind network.
func KindDockerGateway(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "docker", "network", "inspect", "kind", "-f", "{{range .IPAM.Config}}{{.Gateway}} {{end}}").Output()
	if err != nil {
		return "", fmt.Errorf("inspecting the docker network kind: %w", err)
	}
	for _, f := range strings.Fields(string(out)) {
		if ip := net.ParseIP(f); ip != nil && ip.To4() != nil {
			return f, nil
		}
	}
	return "", fmt.Errorf("the docker network kind has no IPv4 gateway (%q)", strings.TrimSpace(string(out)))
}

// DeployVMToKind builds and loads the controller's image, builds the
// VirtualMachine image in the host's Docker daemon (which the controller
// drives) and deploys config/vm. It reports false, with the reason
// printed, when make docker-up made no Docker TLS material to give it.
func DeployVMToKind(ctx context.Context, kindLoad func(context.Context, ...string) error, c client.Client, root string, out io.Writer) (bool, error) {
	clientDir := filepath.Join(DockerTLSDir(), "client")
	if _, err := os.Stat(filepath.Join(clientDir, "key.pem")); err != nil {
		fmt.Fprintf(out, "not deploying the VirtualMachine controller: no Docker client certificate in %s (%v); make docker-up makes it\n", clientDir, err)
		return false, nil
	}
	image, err := buildImage(ctx, root, "./cmd/vm-controller", "vm-controller", filepath.Join(root, "cmd", "vm-controller", "Dockerfile"), VMControllerImage, nil, out)
	if err != nil {
		return false, err
	}
	if err := kindLoad(ctx, image); err != nil {
		return false, err
	}
	if err := vmfixture.EnsureVMImage(ctx, root, out); err != nil {
		return false, err
	}
	gw, err := KindDockerGateway(ctx)
	if err != nil {
		return false, err
	}
	h := HarnessVMOptions()
	err = DeployVMController(ctx, c, VMDeployOptions{
		Root: root, Image: image, DockerIP: gw, ClientCertDir: clientDir, Out: out,
		Args: []string{"--default-image=" + h.DefaultImage, "--usage-refresh=" + h.UsageRefresh.String(), "--failed-retry=" + h.FailedRetry.String()},
	})
	return err == nil, err
}

// VMControllerDeployed reports whether config/vm's Deployment exists.
func VMControllerDeployed(ctx context.Context, c client.Client) (bool, error) {
	err := c.Get(ctx, types.NamespacedName{Namespace: VMNamespace, Name: VMControllerDeployment}, &appsv1.Deployment{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// HarnessVMOptions are the VirtualMachine controller settings the harness
// runs with on every provider: its image and short periods, so that specs
// see refreshes and retries.
func HarnessVMOptions() vm.Options {
	return vm.Options{DefaultImage: vmfixture.VMImage, UsageRefresh: VMUsageRefresh, FailedRetry: VMFailedRetry}
}

// VMUsageRefresh and VMFailedRetry are the harness's VirtualMachine
// controller periods (production: 20s and 1m).
const (
	VMUsageRefresh = 2 * time.Second
	VMFailedRetry  = 3 * time.Second
)
