package framework

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/operator/vm"
	"github.com/kubeharness/kubeharness/webhook/certs"
)

// The deployed VirtualMachine controller (config/vm).
const (
	// VMConfig is the kustomization of the controller's RBAC and Deployment.
	VMConfig = "config/vm"
	// VMControllerDeployment and VMControllerContainer name its Deployment
	// and container.
	VMControllerDeployment = "kubeharness-vm-controller"
	VMControllerContainer  = "vm-controller"
	// VMDockerCertsSecret holds the Docker client certificate it mounts
	// at DOCKER_CERT_PATH.
	VMDockerCertsSecret = "kubeharness-vm-docker-certs"
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

// DeployVMController creates the Secret with the Docker client certificate
// and server-side applies config/vm with the image, the daemon's address
// and the default image set, then waits for the rollout.
func DeployVMController(ctx context.Context, c client.Client, o VMDeployOptions) error {
	out := o.Out
	if out == nil {
		out = io.Discard
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: VMDockerCertsSecret, Namespace: certs.DefaultNamespace},
		Data:       map[string][]byte{},
	}
	for _, f := range []string{"ca.pem", "cert.pem", "key.pem"} {
		data, err := os.ReadFile(filepath.Join(o.ClientCertDir, f))
		if err != nil {
			return fmt.Errorf("the Docker client certificate: %w (make docker-up writes it)", err)
		}
		secret.Data[f] = data
	}
	if err := c.Create(ctx, secret); apierrors.IsAlreadyExists(err) {
		cur := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(secret), cur); err != nil {
			return err
		}
		cur.Data = secret.Data
		err = c.Update(ctx, cur)
		if err != nil {
			return fmt.Errorf("updating Secret %s: %w", VMDockerCertsSecret, err)
		}
	} else if err != nil {
		return fmt.Errorf("creating Secret %s: %w", VMDockerCertsSecret, err)
	}

	objs, err := Render(o.Root, VMConfig)
	if err != nil {
		return err
	}
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
	for _, u := range objs {
		changed, err := apply(ctx, c, u)
		if err != nil {
			return fmt.Errorf("applying %s %s from %s: %w", u.GetKind(), u.GetName(), VMConfig, err)
		}
		if changed {
			fmt.Fprintf(out, "%s/%s configured\n", u.GetKind(), u.GetName())
		}
	}
	return WaitForDeployment(ctx, c, types.NamespacedName{Namespace: certs.DefaultNamespace, Name: VMControllerDeployment})
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
		return fmt.Errorf("Deployment %s has no container %q", VMControllerDeployment, VMControllerContainer) //nolint:staticcheck // Deployment is a kind's name
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
	image, err := buildImage(ctx, root, "./cmd/vm-controller", "vm-controller", filepath.Join(root, "cmd", "vm-controller", "Dockerfile"), VMControllerImage, out)
	if err != nil {
		return false, err
	}
	if err := kindLoad(ctx, image); err != nil {
		return false, err
	}
	if err := EnsureVMImage(ctx, root, out); err != nil {
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
	err := c.Get(ctx, types.NamespacedName{Namespace: certs.DefaultNamespace, Name: VMControllerDeployment}, &appsv1.Deployment{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// HarnessVMOptions are the VirtualMachine controller settings the harness
// runs with on every provider: its image and short periods, so that specs
// see refreshes and retries.
func HarnessVMOptions() vm.Options {
	return vm.Options{DefaultImage: VMImage, UsageRefresh: VMUsageRefresh, FailedRetry: VMFailedRetry}
}
