package operatortest

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeharness/kubeharness/harness/cluster"
	"github.com/kubeharness/kubeharness/internal/deploy"
	"github.com/kubeharness/kubeharness/internal/manager"
	"github.com/kubeharness/kubeharness/internal/scheme"
	"github.com/kubeharness/kubeharness/operator/certs"
)

// Kind and existing clusters run the manager as the Deployment
// config/default describes; the suite connects to it the same way on both.

// connectDeployed waits for a deployed manager and returns the cluster specs
// talk to, with the webhook, metrics and probe ports of one manager replica
// forwarded to local addresses (until stop is called). The replica is one
// that is not the leader where there are several, so a spec that kills the
// leader leaves the forwards working.
func connectDeployed(ctx context.Context, provider string, cfg *rest.Config) (*cluster.Cluster, context.CancelFunc, error) {
	// client-go throttles a kubeconfig's client to 5 requests a second,
	// which made specs that send hundreds of requests (500 admissions during
	// a CA rotation) wait on the client, not on the cluster. The cluster is
	// a disposable one (kind, or marked so); the envtest client has the same.
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = SuiteClientQPS, SuiteClientBurst
	base, err := cluster.Connect(ctx, provider, cfg, scheme.New())
	if err != nil {
		return nil, nil, err
	}
	c, cs := base.Client, base.Clientset
	if err := deploy.WaitForManager(ctx, c); err != nil {
		return nil, nil, err
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
	vmDriver := ""
	if deployed, err := deploy.VMControllerDeployed(ctx, c); err != nil {
		stop()
		return nil, nil, err
	} else if deployed {
		vmDriver = "docker" // config/vm drives the Docker daemon
	}
	base.Abilities = append(base.Abilities, &Operator{
		Deployment: Deployment{
			WebhookAddr: addrs[0], WebhookServerName: fmt.Sprintf("%s.%s.svc", o.ServiceName, o.Namespace),
			MetricsAddr: addrs[1], ProbeAddr: addrs[2], VMDriver: vmDriver,
		},
		CertOptions: o, VMOptions: deploy.HarnessVMOptions(),
	}, RealNodes{})
	return base, stop, nil
}

// SuiteClientQPS and SuiteClientBurst are the client-side rate limits of
// the suite's own client on every provider.
const (
	SuiteClientQPS   = 200
	SuiteClientBurst = 400
)

// followerPod names a Running, Ready manager Pod that does not hold the
// leader-election Lease, or the only one there is.
func followerPod(ctx context.Context, cs kubernetes.Interface) (string, error) {
	pods, err := cs.CoreV1().Pods(certs.DefaultNamespace).List(ctx, metav1.ListOptions{LabelSelector: deploy.ManagerSelector})
	if err != nil {
		return "", err
	}
	leader := ""
	if l, err := cs.CoordinationV1().Leases(certs.DefaultNamespace).Get(ctx, manager.LeaderElectionID, metav1.GetOptions{}); err == nil && l.Spec.HolderIdentity != nil {
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
