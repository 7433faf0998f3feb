package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/coredns/caddy"
	"github.com/coredns/caddy/caddyfile"
	"github.com/coredns/coredns/core/dnsserver"
)

// kubeadmCorefile is kubeadm's default Corefile (CoreDNSConfigMap in
// cmd/kubeadm/app/phases/addons/dns/manifests.go) for the cluster domain
// cluster.local, as a kind cluster runs it.
const kubeadmCorefile = `.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30 {
       disable success cluster.local
       disable denial cluster.local
    }
    loop
    reload
    loadbalance
}
`

func TestKubeadmCorefileParses(t *testing.T) {
	blocks, err := caddyfile.Parse("Corefile", strings.NewReader(kubeadmCorefile), caddy.ValidDirectives("dns"))
	if err != nil {
		t.Fatalf("parsing kubeadm's Corefile with this build's directives: %v", err)
	}
	if len(blocks) != 1 {
		t.Fatalf("kubeadm's Corefile parsed into %d server blocks, want 1", len(blocks))
	}
	for name := range blocks[0].Tokens {
		if _, err := caddy.DirectiveAction("dns", name); err != nil {
			t.Errorf("kubeadm's Corefile uses %q, which this build does not register: %v", name, err)
		}
	}
	if len(blocks[0].Tokens) != len(plugins) {
		t.Errorf("kubeadm's Corefile uses %d plugins, this build lists %d: keep the two in step", len(blocks[0].Tokens), len(plugins))
	}
}

func TestDirectivesAreTheRegisteredPluginsInCoreDNSOrder(t *testing.T) {
	for _, d := range dnsserver.Directives {
		if _, err := caddy.DirectiveAction("dns", d); err != nil {
			t.Errorf("directive %q has no registered plugin: %v", d, err)
		}
	}
	want := make([]string, 0, len(plugins))
	for name := range plugins {
		want = append(want, name)
	}
	got := slices.Sorted(slices.Values(dnsserver.Directives))
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("directives: got %q, want %q", got, want)
	}
}

func TestSubsetKeepsOrder(t *testing.T) {
	got := subset([]string{"reload", "ready", "health", "errors", "log", "cache"}, map[string]bool{"cache": true, "errors": true, "reload": true})
	if want := []string{"reload", "errors", "cache"}; !slices.Equal(got, want) {
		t.Errorf("subset: got %q, want %q", got, want)
	}
}
