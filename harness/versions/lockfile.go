package versions

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// LockfileName is the lockfile at a project's root.
const LockfileName = "versions.yaml"

// Lockfile is versions.yaml: the Kubernetes versions a project is tested
// on, and what each is built with.
type Lockfile struct {
	// Default is the version asked for when nothing names one.
	Default  Version `json:"default"`
	Versions []Entry `json:"versions"`
}

// Entry pins what one Kubernetes version is built from.
type Entry struct {
	Kubernetes Version `json:"kubernetes"`
	// Etcd is the version of etcd built for it.
	Etcd Version `json:"etcd"`
	// KindNode is the stock kind node image for this version, pinned by
	// digest; empty where kind publishes none.
	KindNode string `json:"kindNode,omitempty"`
}

// lockfileText is versions.yaml as written, before its versions are
// parsed: LoadLockfile's errors name the field a version came from.
type lockfileText struct {
	Default  string      `json:"default"`
	Versions []entryText `json:"versions"`
}

type entryText struct {
	Kubernetes string `json:"kubernetes"`
	Etcd       string `json:"etcd"`
	KindNode   string `json:"kindNode,omitempty"`
}

// LoadLockfile reads versions.yaml below root: its default, and each
// version's kubernetes, etcd and kindNode, are parsed and checked here.
// Keys a project adds besides them, at the top or to an entry (its CI
// lanes, a node image's inputs), are its own tools' to read and check:
// LoadLockfile leaves them alone.
func LoadLockfile(root string) (*Lockfile, error) {
	path := filepath.Join(root, LockfileName)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the version lockfile: %w", err)
	}
	var text lockfileText
	if err := yaml.Unmarshal(data, &text); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	if strings.TrimSpace(text.Default) == "" {
		return nil, fmt.Errorf("%s: no default version; add e.g. `default: 1.37.1`", path)
	}
	l := &Lockfile{}
	if l.Default, err = Parse(text.Default); err != nil {
		return nil, fmt.Errorf("%s: default: %v", path, err)
	}
	for i, e := range text.Versions {
		if strings.TrimSpace(e.Kubernetes) == "" || strings.TrimSpace(e.Etcd) == "" {
			return nil, fmt.Errorf("%s: versions[%d] needs both kubernetes and etcd", path, i)
		}
		entry := Entry{KindNode: e.KindNode}
		if entry.Kubernetes, err = Parse(e.Kubernetes); err != nil {
			return nil, fmt.Errorf("%s: versions[%d].kubernetes: %v", path, i, err)
		}
		if entry.Etcd, err = Parse(e.Etcd); err != nil {
			return nil, fmt.Errorf("%s: versions[%d].etcd: %v", path, i, err)
		}
		if e.KindNode != "" && !strings.Contains(e.KindNode, "@sha256:") {
			return nil, fmt.Errorf("%s: versions[%d].kindNode %q is not pinned by digest; write it as kindest/node:vX.Y.Z@sha256:<digest>", path, i, e.KindNode)
		}
		l.Versions = append(l.Versions, entry)
	}
	return l, nil
}

// Lookup returns the entry for a Kubernetes version.
func (l *Lockfile) Lookup(v Version) (Entry, bool) {
	for _, e := range l.Versions {
		if e.Kubernetes == v {
			return e, true
		}
	}
	return Entry{}, false
}

// Explain adds to err, when it is a *SelectorError of a request that is no
// version, the versions l pins, as examples of what to ask for; any other
// error it returns as it is.
func (l *Lockfile) Explain(err error) error {
	var bad *SelectorError
	if l == nil || !errors.As(err, &bad) || bad.prerelease {
		return err
	}
	return fmt.Errorf("%w%s", err, l.hint(bad.sel))
}

// pinned lists the Kubernetes versions l pins, newest first.
func (l *Lockfile) pinned() []Version {
	var vs []Version
	for _, e := range l.Versions {
		vs = append(vs, e.Kubernetes)
	}
	sortDesc(vs)
	return vs
}

// hint lists the versions l pins and how to ask for them the way sel
// asked, without asking the proxy.
func (l *Lockfile) hint(sel Selector) string {
	return hintFor(sel, l.pinned(), "those in "+LockfileName+"; a minor means its newest patch the Go module proxy serves")
}

// hintFor lists versions (newest first), what they are, and how to ask for
// one of them or for a minor the way sel asked.
func hintFor(sel Selector, versions []Version, what string) string {
	if len(versions) == 0 {
		return ""
	}
	texts := make([]string, len(versions))
	for i, v := range versions {
		texts[i] = v.String()
	}
	return fmt.Sprintf(". Versions that can be built: %s (%s); ask for one of them, e.g. %s, or for a minor, e.g. %s",
		strings.Join(texts, ", "), what, sel.ask(versions[0].String()), sel.ask(versions[0].minorString()))
}

// sortDesc sorts versions newest first.
func sortDesc(vs []Version) {
	slices.SortFunc(vs, func(a, b Version) int { return b.Compare(a) })
}
