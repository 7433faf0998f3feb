package controlplane

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Installing CRDs on a fresh API server takes longer than the tuned start
// itself: each CRD is written, the apiextensions controllers name-check and
// establish it, and discovery serves its resources only after that (about
// 1.5 s for a few CRDs). A suite installs the same CRDs on every start, so
// a start that is given them (Options.CRDs) begins from an etcd template
// that holds them established: the template of the same binaries and flags
// with the CRDs installed once, kept beside it under a name that adds the
// CRDs' content. The API server then serves them as soon as it is ready,
// and installing them again (controller-runtime's InstallCRDs) finds each
// in place, updates it to what it already is, and finds discovery serving.
//
// Every change to a CRD is a new template; the least recently used ones
// beyond keptCRDTemplates are removed when a new one is made.

// crdTemplateInfix joins a template's name to the sum of the CRDs it holds.
const crdTemplateInfix = "-crds-"

// keptCRDTemplates is how many CRD templates of one base template are
// kept; crdTemplateIdle is how long one must have gone unused before it is
// removed, so that a template another process is about to copy stays.
const (
	keptCRDTemplates = 4
	crdTemplateIdle  = time.Hour
)

// crdInstallTimeout bounds installing the CRDs into a new template.
const crdInstallTimeout = 60 * time.Second

// crdContent is what of a CRD a template holds and its key covers: what
// the API server stores from a CRD a suite installs, not what a previous
// install wrote back into the object (resourceVersion, uid, status).
func crdContent(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta: metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{
			Name: crd.Name, Labels: crd.Labels, Annotations: crd.Annotations,
		},
		Spec: *crd.Spec.DeepCopy(),
	}
}

// crdsByName is crds' content, one per name (the last given wins, as it
// would when installed in order), sorted by name.
func crdsByName(crds []*apiextensionsv1.CustomResourceDefinition) []*apiextensionsv1.CustomResourceDefinition {
	byName := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, crd := range crds {
		if crd != nil {
			byName[crd.Name] = crdContent(crd)
		}
	}
	out := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(byName))
	for _, crd := range byName {
		out = append(out, crd)
	}
	slices.SortFunc(out, func(a, b *apiextensionsv1.CustomResourceDefinition) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// crdsSum is the hex sum of crds' content, the same for the same CRDs in
// any order.
func crdsSum(crds []*apiextensionsv1.CustomResourceDefinition) (string, error) {
	h := sha256.New()
	for _, crd := range crdsByName(crds) {
		b, err := json.Marshal(crd)
		if err != nil {
			return "", fmt.Errorf("CRD %s: %w", crd.Name, err)
		}
		h.Write(b)
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// ensureCRDTemplate returns the template holding o.CRDs, making it first
// from the base template (the same binaries and flags without CRDs): it
// starts a tuned control plane on a copy of the base, installs the CRDs,
// waits until discovery serves every one, stops it and keeps the data. A
// start makes it without a start of its own where it can freeze etcd
// (ControlPlane.start); this is for the systems where it cannot.
func ensureCRDTemplate(binDir string, o Options) (string, error) {
	name, err := templateName(binDir, o)
	if err != nil {
		return "", err
	}
	parents, err := templateParents(binDir, o)
	if err != nil {
		return "", err
	}
	if dir, err := findTemplate(parents, name); dir != "" || err != nil {
		return dir, err
	}
	baseOptions := o
	baseOptions.CRDs = nil
	base, err := ensureTemplate(binDir, baseOptions)
	if err != nil {
		return "", err
	}
	parent := parents[0]
	staging, err := os.MkdirTemp(parent, ".staging-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(staging)
	if err := copyTree(base, staging); err != nil {
		return "", fmt.Errorf("copying the etcd template %s: %w", base, err)
	}
	install := func(c *ControlPlane) error { return installCRDs(c, o.CRDs) }
	if err := makeTemplate(binDir, o, staging, tunedReadyPath, install); err != nil {
		return "", fmt.Errorf("making the etcd template that holds the CRDs in %s: %w", staging, err)
	}
	dir, err := keepTemplate(staging, filepath.Join(parent, name))
	if err != nil {
		return "", err
	}
	pruneCRDTemplates(dir)
	return dir, nil
}

// installCRDs creates crds on c and waits until discovery serves each of
// their resources, as controller-runtime's InstallCRDs does.
func installCRDs(c *ControlPlane, crds []*apiextensionsv1.CustomResourceDefinition) error {
	content := crdsByName(crds)
	if err := envtest.CreateCRDs(c.Config, content); err != nil {
		return err
	}
	return envtest.WaitForCRDs(c.Config, content, envtest.CRDInstallOptions{MaxTime: crdInstallTimeout, PollInterval: 20 * time.Millisecond})
}

// pruneCRDTemplates removes the CRD templates of made's base template
// beyond the keptCRDTemplates most recently used, if unused for
// crdTemplateIdle.
func pruneCRDTemplates(made string) {
	base, _, ok := strings.Cut(filepath.Base(made), crdTemplateInfix)
	if !ok {
		return
	}
	entries, err := os.ReadDir(filepath.Dir(made))
	if err != nil {
		return
	}
	type template struct {
		path string
		used time.Time
	}
	var templates []template
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), base+crdTemplateInfix) {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		templates = append(templates, template{filepath.Join(filepath.Dir(made), e.Name()), fi.ModTime()})
	}
	slices.SortFunc(templates, func(a, b template) int { return b.used.Compare(a.used) })
	for _, t := range templates[min(len(templates), keptCRDTemplates):] {
		if t.path != made && time.Since(t.used) > crdTemplateIdle {
			_ = os.RemoveAll(t.path)
		}
	}
}

// Base templates (one per binary pair and flag set) are removed with
// their CRD templates once unused for baseTemplateIdle, when another base
// template is made in the same directory: new binaries leave the old
// ones' templates behind. With pruneCRDTemplates this bounds a templates
// directory to the bases used within baseTemplateIdle, each with
// keptCRDTemplates CRD templates and those used within crdTemplateIdle;
// a template is about a megabyte (copySparse).
const baseTemplateIdle = 7 * 24 * time.Hour

// pruneBaseTemplates removes the base templates beside made, and their
// CRD templates, unused for baseTemplateIdle.
func pruneBaseTemplates(made string) {
	parent := filepath.Dir(made)
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	used := map[string]time.Time{}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil || !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		base, _, _ := strings.Cut(e.Name(), crdTemplateInfix)
		if t := fi.ModTime(); t.After(used[base]) {
			used[base] = t
		}
	}
	for _, e := range entries {
		base, _, _ := strings.Cut(e.Name(), crdTemplateInfix)
		last, ok := used[base]
		if ok && base != filepath.Base(made) && time.Since(last) > baseTemplateIdle {
			_ = os.RemoveAll(filepath.Join(parent, e.Name()))
		}
	}
}
