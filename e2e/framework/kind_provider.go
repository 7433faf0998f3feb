package framework

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/cmd/manager/app"
	"github.com/kubeharness/kubeharness/e2e/framework/kindcluster"
	"github.com/kubeharness/kubeharness/webhook/certs"
)

// KeepEnv, when "1" or "true", keeps a kind cluster the suite created.
const KeepEnv = "KIND_KEEP"

// KindProvider runs the suite on a kind cluster made from kind-config.yaml:
// it creates the cluster unless it exists, builds and loads the manager
// image, deploys config/default, and waits for the rollout and for the
// webhooks to admit a dry-run canary. A cluster it created is deleted at
// the end unless KIND_KEEP=1; one that existed is left as it was found.
type KindProvider struct {
	Root    string
	Version string
	Out     io.Writer

	kind    *kindcluster.Cluster
	created bool
	stop    context.CancelFunc
}

var _ Provider = &KindProvider{}

// Name implements Provider.
func (p *KindProvider) Name() string { return "kind" }

func (p *KindProvider) out() io.Writer {
	if p.Out == nil {
		return os.Stderr
	}
	return p.Out
}

// Start implements Provider.
func (p *KindProvider) Start(ctx context.Context) (*Cluster, error) {
	p.kind = kindcluster.New(p.Root, kindcluster.Name())
	p.kind.Out = p.out()
	created, err := p.kind.Up(ctx, p.Version, "")
	if err != nil {
		return nil, err
	}
	p.created = created
	cfg, err := DeployToKind(ctx, p.kind, p.Root, p.out())
	if err != nil {
		return nil, err
	}
	cl, stop, err := connectDeployed(ctx, p.Name(), cfg)
	p.stop = stop
	if cl != nil {
		cl.KindName = p.kind.Name
	}
	return cl, err
}

// Stop implements Provider.
func (p *KindProvider) Stop(ctx context.Context) error {
	if p.stop != nil {
		p.stop()
	}
	if p.kind == nil || !p.created {
		return nil
	}
	if v := os.Getenv(KeepEnv); v == "1" || v == "true" {
		fmt.Fprintf(p.out(), "%s is set: keeping kind cluster %q (make kind-down deletes it)\n", KeepEnv, p.kind.Name)
		return nil
	}
	return p.kind.Delete("")
}

// DeployToKind builds the manager image and the workload images specs run,
// loads them into every node of the kind cluster, marks the cluster
// disposable and server-side applies config/default; it returns the
// cluster's REST config. Deploying an unchanged tree changes nothing.
func DeployToKind(ctx context.Context, kind *kindcluster.Cluster, root string, out io.Writer) (*rest.Config, error) {
	kubeconfig, err := kind.Kubeconfig()
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	image, err := BuildManagerImage(ctx, root, out)
	if err != nil {
		return nil, err
	}
	workloads, err := WorkloadImages(ctx, root)
	if err != nil {
		return nil, err
	}
	if err := kind.LoadImages(ctx, append([]string{image}, workloads...)...); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		return nil, err
	}
	if err := MarkDisposable(ctx, c, "kubeharness kind up"); err != nil {
		return nil, err
	}
	if err := Deploy(ctx, c, DeployOptions{Root: root, Image: image, Out: out}); err != nil {
		return nil, err
	}
	return cfg, nil
}

// ExportLogs writes kind's logs of every node below dir.
func (p *KindProvider) ExportLogs(dir string) error {
	if p.kind == nil {
		return errors.New("no kind cluster")
	}
	return p.kind.ExportLogs(dir)
}

// ExistingProvider runs the suite on the cluster of the current kubeconfig
// context ($KUBECONFIG, --context through $KUBECONTEXT), where kubeharness
// is already deployed (make kind-up, make deploy). It refuses a cluster
// that does not carry the disposable marker: the suite creates and deletes
// namespaces, nodes' statuses and CSRs, and must never run against a
// cluster someone depends on.
type ExistingProvider struct {
	// Kubeconfig is the kubeconfig file; empty means $KUBECONFIG, then
	// ~/.kube/config.
	Kubeconfig string
	stop       context.CancelFunc
}

var _ Provider = &ExistingProvider{}

// Name implements Provider.
func (*ExistingProvider) Name() string { return "existing" }

// Start implements Provider.
func (p *ExistingProvider) Start(ctx context.Context) (*Cluster, error) {
	cfg, where, err := LoadKubeconfig(p.Kubeconfig, os.Getenv("KUBECONTEXT"))
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		return nil, err
	}
	if err := CheckDisposable(ctx, c); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	cl, stop, err := connectDeployed(ctx, p.Name(), cfg)
	p.stop = stop
	return cl, err
}

// Stop implements Provider: the cluster is not the suite's to remove.
func (p *ExistingProvider) Stop(context.Context) error {
	if p.stop != nil {
		p.stop()
	}
	return nil
}

// LoadKubeconfig loads the REST config of a kubeconfig context, as kubectl
// would: path, else $KUBECONFIG, else ~/.kube/config; kubeContext, else the
// current context. It also returns a description of where that is, for
// messages.
func LoadKubeconfig(path, kubeContext string) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	if kubeContext == "" {
		raw, err := loader.RawConfig()
		if err != nil {
			return nil, "", err
		}
		kubeContext = raw.CurrentContext
	}
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig context %q: %w", kubeContext, err)
	}
	return cfg, fmt.Sprintf("context %q (%s)", kubeContext, cfg.Host), nil
}

// connectDeployed waits for a deployed manager and returns the Cluster specs
// talk to, with the webhook, metrics and probe ports of one manager replica
// forwarded to local addresses (until stop is called). The replica is one
// that is not the leader where there are several, so a spec that kills the
// leader leaves the forwards working.
func connectDeployed(ctx context.Context, provider string, cfg *rest.Config) (*Cluster, context.CancelFunc, error) {
	c, err := client.New(cfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		return nil, nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	if err := WaitForManager(ctx, c); err != nil {
		return nil, nil, err
	}
	info, err := cs.Discovery().ServerVersion()
	if err != nil {
		return nil, nil, fmt.Errorf("reading server version: %w", err)
	}
	pod, err := followerPod(ctx, cs)
	if err != nil {
		return nil, nil, err
	}
	fctx, stop := context.WithCancel(context.Background())
	addrs, err := PortForward(fctx, cfg, certs.DefaultNamespace, pod, 9443, 8443, 8081)
	if err != nil {
		stop()
		return nil, nil, err
	}
	o := certs.Options{}.Defaulted()
	return &Cluster{
		Provider: provider, Config: cfg, Client: c, Clientset: cs, Version: info,
		CertOptions: o, GarbageCollector: true, RealNodes: true,
		WebhookAddr: addrs[0], WebhookServerName: fmt.Sprintf("%s.%s.svc", o.ServiceName, o.Namespace),
		MetricsAddr: addrs[1], ProbeAddr: addrs[2],
	}, stop, nil
}

// followerPod names a Running, Ready manager Pod that does not hold the
// leader-election Lease, or the only one there is.
func followerPod(ctx context.Context, cs kubernetes.Interface) (string, error) {
	pods, err := cs.CoreV1().Pods(certs.DefaultNamespace).List(ctx, metav1.ListOptions{LabelSelector: ManagerSelector})
	if err != nil {
		return "", err
	}
	leader := ""
	if l, err := cs.CoordinationV1().Leases(certs.DefaultNamespace).Get(ctx, app.LeaderElectionID, metav1.GetOptions{}); err == nil && l.Spec.HolderIdentity != nil {
		leader, _, _ = strings.Cut(*l.Spec.HolderIdentity, "_")
	}
	var ready []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && PodReady(&p) {
			ready = append(ready, p.Name)
		}
	}
	if len(ready) == 0 {
		return "", fmt.Errorf("no Ready manager Pod in %s", certs.DefaultNamespace)
	}
	for _, name := range ready {
		if name != leader {
			return name, nil
		}
	}
	return ready[0], nil
}

// PodReady reports whether the Pod's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// NodeReady reports whether the node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// MarkDisposable leaves the disposable marker in a cluster made to be
// thrown away.
func MarkDisposable(ctx context.Context, c client.Client, by string) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: DisposableMarker, Namespace: metav1.NamespaceSystem},
		Data:       map[string]string{"createdBy": by},
	}
	if err := c.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("marking the cluster disposable: %w", err)
	}
	return nil
}

// CheckDisposable fails unless the cluster carries the disposable marker.
func CheckDisposable(ctx context.Context, c client.Client) error {
	cm := &corev1.ConfigMap{}
	err := c.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: DisposableMarker}, cm)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("refusing to run: the cluster has no ConfigMap kube-system/%s, the marker of a disposable cluster that `make kind-up` and `make envtest-up` set. "+
			"The suite creates and deletes objects cluster-wide; if this cluster really is yours to break, mark it with "+
			"`kubectl -n kube-system create configmap %s --from-literal=createdBy=me`", DisposableMarker, DisposableMarker)
	}
	if err != nil {
		return fmt.Errorf("reading the disposable marker: %w", err)
	}
	return nil
}

// ManagerImage is the repository of the manager image the harness builds.
const ManagerImage = "kubeharness/manager"

// BuildManagerImage builds the manager image from Dockerfile (a static
// binary on scratch, nothing pulled) and returns a tag named after its
// content, so deploying an unchanged manager changes nothing.
func BuildManagerImage(ctx context.Context, root string, out io.Writer) (string, error) {
	bin := filepath.Join(root, "bin", "image", "manager")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "./cmd/manager")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the manager: %v\n%s", err, b)
	}
	dev := ManagerImage + ":dev"
	docker := exec.CommandContext(ctx, "docker", "build", "-q", "-t", dev, "-f", filepath.Join(root, "Dockerfile"), filepath.Dir(bin))
	docker.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	b, err := docker.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("docker build of %s: %v\n%s", dev, err, b)
	}
	id, err := exec.CommandContext(ctx, "docker", "image", "inspect", "-f", "{{.Id}}", dev).Output()
	if err != nil {
		return "", fmt.Errorf("inspecting %s: %w", dev, err)
	}
	tag := ManagerImage + ":" + strings.TrimPrefix(strings.TrimSpace(string(id)), "sha256:")[:12]
	if b, err := exec.CommandContext(ctx, "docker", "tag", dev, tag).CombinedOutput(); err != nil {
		return "", fmt.Errorf("docker tag %s: %v\n%s", tag, err, b)
	}
	fmt.Fprintf(out, "manager image: %s\n", tag)
	return tag, nil
}
