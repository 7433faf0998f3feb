// Command nodenet is the pod network of kubeharness' offline kind node image,
// working the way kind's own kindnet does: every node already shares one L2
// network (the container runtime's bridge), so pods on different nodes reach
// each other through plain routes.
//
// Running on every node (a hostNetwork DaemonSet), it
//   - writes this node's CNI configuration (ptp + host-local for the node's
//     podCIDRs, then portmap), which is what turns the node Ready;
//   - keeps a route to every other node's podCIDRs through that node's
//     InternalIP, and removes routes of nodes that left;
//   - masquerades pod traffic that leaves the cluster's pod network, so pods
//     reach the outside world as their node.
//
// kindnet itself is not published as a Go module, so a kind node image built
// from the Go module proxy alone cannot carry it; flannel's CNI plugin is not
// published there either.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// routeProtocol marks the routes nodenet owns, so it removes only its own.
const routeProtocol = netlink.RouteProtocol(87)

type options struct {
	nodeName  string
	podSubnet string
	cniDir    string
	resync    time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.nodeName, "node-name", os.Getenv("NODE_NAME"), "this node's name (default $NODE_NAME, set from the Pod's spec.nodeName)")
	flag.StringVar(&o.podSubnet, "pod-subnet", os.Getenv("POD_SUBNET"), "the cluster's pod network (default $POD_SUBNET); traffic from it to elsewhere is masqueraded")
	flag.StringVar(&o.cniDir, "cni-config-dir", "/etc/cni/net.d", "where the CNI configuration is written")
	flag.DurationVar(&o.resync, "resync", 30*time.Second, "how often routes are reconciled even without node changes")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "nodenet: %v\n", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.nodeName == "" {
		return errors.New("no node name: set --node-name or $NODE_NAME (the DaemonSet sets it from spec.nodeName)")
	}
	_, cluster, err := net.ParseCIDR(o.podSubnet)
	if err != nil {
		return fmt.Errorf("--pod-subnet %q: %v (want the cluster's pod CIDR, for example 10.244.0.0/16)", o.podSubnet, err)
	}
	cfg, err := restConfig()
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if err := ensureMasquerade(cluster.String()); err != nil {
		return err
	}

	factory := informers.NewSharedInformerFactory(cs, o.resync)
	nodes := factory.Core().V1().Nodes()
	changed := make(chan struct{}, 1)
	poke := func(any) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    poke,
		UpdateFunc: func(_, n any) { poke(n) },
		DeleteFunc: poke,
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), nodes.Informer().HasSynced) {
		return errors.New("the node cache never synced")
	}
	klog.InfoS("nodenet started", "node", o.nodeName, "podSubnet", cluster.String())
	tick := time.NewTicker(o.resync)
	defer tick.Stop()
	for {
		list, err := nodes.Lister().List(labels.Everything())
		if err == nil {
			err = reconcile(o, list)
		}
		if err != nil {
			klog.ErrorS(err, "reconciling the node network")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-tick.C:
		}
	}
}

// restConfig talks to the API server directly when kind tells the DaemonSet
// its endpoint (CONTROL_PLANE_ENDPOINT), so the network comes up without
// waiting for kube-proxy to program the kubernetes Service.
func restConfig() (*rest.Config, error) {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("in-cluster configuration: %w", err)
	}
	if ep := os.Getenv("CONTROL_PLANE_ENDPOINT"); ep != "" {
		cfg.Host = "https://" + ep
	}
	return cfg, nil
}

func reconcile(o options, list []*corev1.Node) error {
	var self *corev1.Node
	want := map[string]net.IP{} // podCIDR -> gateway
	for _, n := range list {
		if n.Name == o.nodeName {
			self = n
			continue
		}
		ip := internalIP(n)
		if ip == nil {
			continue
		}
		for _, c := range podCIDRs(n) {
			want[c] = ip
		}
	}
	if self == nil {
		return fmt.Errorf("node %q is not in the API server's node list", o.nodeName)
	}
	own := podCIDRs(self)
	if len(own) == 0 {
		return fmt.Errorf("node %q has no spec.podCIDR yet (kube-controller-manager allocates it when --allocate-node-cidrs is on)", o.nodeName)
	}
	if err := writeCNIConfig(o.cniDir, own); err != nil {
		return err
	}
	return syncRoutes(want)
}

func podCIDRs(n *corev1.Node) []string {
	if len(n.Spec.PodCIDRs) > 0 {
		return n.Spec.PodCIDRs
	}
	if n.Spec.PodCIDR != "" {
		return []string{n.Spec.PodCIDR}
	}
	return nil
}

func internalIP(n *corev1.Node) net.IP {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			if ip := net.ParseIP(a.Address); ip != nil && ip.To4() != nil {
				return ip
			}
		}
	}
	return nil
}

// cniConfig is this node's network: each pod gets a veth pair to the node
// (ptp), an address from the node's podCIDRs (host-local) and hostPort
// support (portmap).
func cniConfig(cidrs []string) string {
	var ranges []string
	for _, c := range cidrs {
		if strings.Contains(c, ":") {
			continue // IPv4 only: the kind config here is single-stack
		}
		ranges = append(ranges, fmt.Sprintf(`[{"subnet": %q}]`, c))
	}
	return fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "kubeharness",
  "plugins": [
    {
      "type": "ptp",
      "ipMasq": false,
      "ipam": {
        "type": "host-local",
        "dataDir": "/run/cni-ipam-state",
        "routes": [{"dst": "0.0.0.0/0"}],
        "ranges": [%s]
      },
      "mtu": 1500
    },
    {
      "type": "portmap",
      "capabilities": {"portMappings": true}
    }
  ]
}
`, strings.Join(ranges, ", "))
}

// writeCNIConfig replaces the configuration atomically, and only when it
// changed: the container runtime watches the directory.
func writeCNIConfig(dir string, cidrs []string) error {
	path := filepath.Join(dir, "10-kubeharness.conflist")
	want := cniConfig(cidrs)
	if have, err := os.ReadFile(path); err == nil && string(have) == want {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(want), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	klog.InfoS("wrote the CNI configuration", "path", path, "podCIDRs", cidrs)
	return nil
}

func syncRoutes(want map[string]net.IP) error {
	have, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Protocol: routeProtocol}, netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		return fmt.Errorf("listing routes: %w", err)
	}
	var errs []error
	for cidr, gw := range want {
		_, dst, err := net.ParseCIDR(cidr)
		if err != nil {
			errs = append(errs, fmt.Errorf("node podCIDR %q: %w", cidr, err))
			continue
		}
		r := netlink.Route{Dst: dst, Gw: gw, Protocol: routeProtocol}
		if err := netlink.RouteReplace(&r); err != nil {
			errs = append(errs, fmt.Errorf("route %s via %s: %w", dst, gw, err))
		}
	}
	for _, r := range have {
		if r.Dst == nil {
			continue
		}
		if _, ok := want[r.Dst.String()]; ok {
			continue
		}
		if err := netlink.RouteDel(&r); err != nil {
			errs = append(errs, fmt.Errorf("removing route %s of a node that left: %w", r.Dst, err))
			continue
		}
		klog.InfoS("removed the route of a node that left", "podCIDR", r.Dst.String())
	}
	return errors.Join(errs...)
}

// ensureMasquerade makes pod traffic leaving the pod network look like the
// node's own, once; the rule is checked before it is added, so restarts do
// not stack duplicates.
func ensureMasquerade(podSubnet string) error {
	rule := []string{"-t", "nat", "POSTROUTING", "-s", podSubnet, "!", "-d", podSubnet,
		"-m", "comment", "--comment", "kubeharness nodenet: pods leaving the pod network", "-j", "MASQUERADE"}
	check := append([]string{"-C"}, rule[2:]...)
	check = append(rule[:2:2], check...)
	if exec.Command("iptables", check...).Run() == nil {
		return nil
	}
	add := slices.Concat(rule[:2], []string{"-A"}, rule[2:])
	if out, err := exec.Command("iptables", add...).CombinedOutput(); err != nil {
		return fmt.Errorf("iptables %s: %v: %s", strings.Join(add, " "), err, out)
	}
	klog.InfoS("masquerading pod traffic that leaves the pod network", "podSubnet", podSubnet)
	return nil
}
