// Command coredns is CoreDNS with only the plugins that kubeadm's default
// Corefile uses (cmd/kubeadm/app/phases/addons/dns/manifests.go), the one a
// kind cluster runs, for the offline kind node image. The stock build
// (github.com/coredns/coredns, core/plugin/zplugin.go) links every plugin
// with its dependencies, cloud DNS backends among them, and took most of the
// node image's compile time; this is the custom build CoreDNS documents: the
// same coremain, fewer plugin imports, and dnsserver.Directives cut down to
// them.
//
// The CoreDNS version is the one hack/kind-node/go.mod requires: the one
// the default Kubernetes version's kubeadm asks for. For another version's
// kubeadm, hack/kind-node-image.sh builds this program from a copy of
// go.mod that requires the CoreDNS version asked for. A Corefile that names
// any other plugin is refused at start ("unknown directive"); to offer one,
// import it below and add its directive name to plugins.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	// The plugins of kubeadm's default Corefile, by directive name:
	// errors, health, ready, kubernetes, prometheus (plugin/metrics),
	// forward, cache, loop, reload and loadbalance.
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

// plugins are the directive names of the plugins imported above.
var plugins = map[string]bool{
	"errors":      true,
	"health":      true,
	"ready":       true,
	"kubernetes":  true,
	"prometheus":  true,
	"forward":     true,
	"cache":       true,
	"loop":        true,
	"reload":      true,
	"loadbalance": true,
}

func init() {
	dnsserver.Directives = subset(dnsserver.Directives, plugins)
}

// subset returns the directives of all that are in keep, in all's order:
// the order in which a request passes the plugins is CoreDNS's
// (core/dnsserver/zdirectives.go of the version built), whatever order a
// Corefile lists them in.
func subset(all []string, keep map[string]bool) []string {
	var out []string
	for _, d := range all {
		if keep[d] {
			out = append(out, d)
		}
	}
	return out
}

func main() {
	coremain.Run()
}
