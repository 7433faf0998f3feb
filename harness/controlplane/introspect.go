package controlplane

import (
	"cmp"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// What a tuned control plane holds on the machine, for checks that Stop
// gives all of it back (`kubeharness bench` cycles starts and stops).

// Dir is the directory of the control plane's certificates, keys,
// kubeconfig and etcd's sockets, which Stop removes.
func (c *ControlPlane) Dir() string { return c.dir }

// Ports returns the loopback TCP ports the control plane's processes
// were told to listen on, by role: kube-apiserver, and etcd-client and
// etcd-peer for an etcd told to listen on TCP (a tuned etcd listens on unix
// sockets only: etcdsocket.go). They are read from the command lines, so
// they name the ports of the processes that actually ran.
func (c *ControlPlane) Ports() map[string]int {
	var etcdArgs, apiArgs []string
	if c.etcd != nil && c.etcd.process() != nil {
		etcdArgs = c.etcd.process().Command().Args
	}
	if c.api != nil && c.api.process() != nil {
		apiArgs = c.api.process().Command().Args
	}
	return ports(etcdArgs, apiArgs)
}

// ports reads the ports from etcd's and kube-apiserver's arguments.
func ports(etcdArgs, apiArgs []string) map[string]int {
	ports := map[string]int{}
	for role, flag := range map[string]string{"etcd-client": "--listen-client-urls", "etcd-peer": "--listen-peer-urls"} {
		if u, err := url.Parse(flagValue(etcdArgs, flag)); err == nil {
			if p, err := strconv.Atoi(u.Port()); err == nil && p > 0 {
				ports[role] = p
			}
		}
	}
	if p, err := strconv.Atoi(flagValue(apiArgs, "--secure-port")); err == nil && p > 0 {
		ports["kube-apiserver"] = p
	}
	return ports
}

// flagValue is the value of the last --name=value in args.
func flagValue(args []string, name string) string {
	v := ""
	for _, a := range args {
		if s, ok := strings.CutPrefix(a, name+"="); ok {
			v = s
		}
	}
	return v
}

// ScratchGlobs are glob patterns for everything a start of o creates
// outside the etcd templates it keeps, and Stop (or the template's
// bootstrap) removes again: etcd's data directory (on tmpfs unless o.Dir),
// the directory of certificates and kubeconfig, and the staging directory
// of a template being bootstrapped in o's TemplateDir, in that order. They
// follow the names start, run and ensureTemplate use.
func ScratchGlobs(o Options) ([]string, error) {
	templates, err := templatesDir(o)
	if err != nil {
		return nil, err
	}
	return []string{
		filepath.Join(cmp.Or(o.Dir, etcdTmpfsDir()), "kubeharness-etcd-*"),
		filepath.Join(cmp.Or(o.Dir, os.TempDir()), "kubeharness-controlplane-*"),
		filepath.Join(templates, ".staging-*"),
	}, nil
}
