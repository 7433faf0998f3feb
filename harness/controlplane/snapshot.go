package controlplane

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
)

// A start that finds no template for what it needs makes one without a
// start and stop of its own: its own etcd's data, copied while etcd is
// stopped (SIGSTOP) at the moment the data is what a template must hold,
// is that template. A frozen etcd's files are what they would be had it
// been killed then, which etcd recovers from by design (its write-ahead
// log holds every write the database file may lack yet); nothing else
// writes to them. The copy takes a few milliseconds (copySparse), during
// which the API server's requests to etcd wait.

// needed are the templates a start found and those it has to make.
type needed struct {
	// from is the template the start copies, "" for none: it then
	// bootstraps from an empty data directory.
	from string
	// parent is where missing templates are made; base and crds are
	// their names, empty when found (crds also when there are no CRDs).
	parent, base, crds string
}

// findTemplates looks for the template holding o.CRDs (when given) and
// else for the base template, in templateParents' order.
func findTemplates(binDir string, o Options) (needed, error) {
	parents, err := templateParents(binDir, o)
	if err != nil {
		return needed{}, err
	}
	n := needed{parent: parents[0]}
	if len(o.CRDs) > 0 {
		if n.crds, err = templateName(binDir, o); err != nil {
			return n, err
		}
		if n.from, err = findTemplate(parents, n.crds); n.from != "" || err != nil {
			n.crds = ""
			return n, err
		}
	}
	baseOptions := o
	baseOptions.CRDs = nil
	if n.base, err = templateName(binDir, baseOptions); err != nil {
		return n, err
	}
	if n.from, err = findTemplate(parents, n.base); n.from != "" {
		n.base = ""
	}
	return n, err
}

// makeTemplates makes the templates n lacks from the running plane: the
// base once the bootstrap has finished, then the CRD template once the
// CRDs are installed and discovery serves them.
func (c *ControlPlane) makeTemplates(o Options, n needed) error {
	if n.base == "" && n.crds == "" {
		return nil
	}
	began := time.Now()
	defer func() { c.Times.MadeIn = time.Since(began) }()
	if err := os.MkdirAll(n.parent, 0o755); err != nil {
		return err
	}
	if err := checkPrivateChain(n.parent); err != nil {
		return refusal(n.parent, err)
	}
	if n.base != "" {
		if err := waitDefaultNamespace(c); err != nil {
			return fmt.Errorf("bootstrapping the etcd template: %w", err)
		}
		dir, err := c.snapshot(n.parent, n.base)
		if err != nil {
			return err
		}
		pruneBaseTemplates(dir)
		c.Times.Made = append(c.Times.Made, "base")
	}
	if n.crds != "" {
		admin := rest.CopyConfig(c.Config)
		admin.QPS, admin.Burst = 1000, 2000
		if err := installCRDs(&ControlPlane{Config: admin}, o.CRDs); err != nil {
			return fmt.Errorf("installing the CRDs for their etcd template: %w", err)
		}
		dir, err := c.snapshot(n.parent, n.crds)
		if err != nil {
			return err
		}
		pruneCRDTemplates(dir)
		c.Times.Made = append(c.Times.Made, "CRDs")
	}
	return nil
}

// freezeTimeout bounds the wait for etcd to stop after SIGSTOP.
const freezeTimeout = 5 * time.Second

// snapshot keeps a copy of etcd's data, taken while etcd is stopped, as
// the template name in parent, and returns its directory (another
// start's, when one kept it first).
func (c *ControlPlane) snapshot(parent, name string) (string, error) {
	staging, err := os.MkdirTemp(parent, ".staging-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(staging)
	p := c.etcd.process()
	if err := p.Signal(sigStop); err != nil {
		return "", err
	}
	err = stopped(p.Pid(), freezeTimeout)
	if err == nil {
		err = copyTree(c.EtcdDataDir, staging)
	}
	if contErr := p.Signal(sigCont); err == nil {
		err = contErr
	}
	if err != nil {
		return "", fmt.Errorf("copying etcd's data into the template %s: %w", filepath.Join(parent, name), err)
	}
	return keepTemplate(staging, filepath.Join(parent, name))
}
