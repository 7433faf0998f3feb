package bundle

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// Bundle is what a person needs to debug one failed spec that ran in one
// namespace: its objects, its events, and the lines its controllers logged
// while it ran.
type Bundle struct {
	// Config reaches the API server; it should be allowed to list every
	// namespaced resource of Namespace.
	Config *rest.Config
	// Namespace is the spec's namespace.
	Namespace string
	// Start and End bound the spec; log lines outside them are left out.
	Start, End time.Time
	// Logs are JSON log files (one object per line, with its time in "ts")
	// whose lines from Start to End are written as <Name>.log.
	Logs []Log
}

// Log is a JSON log file of a process a suite runs (a controller manager,
// say), named for the bundle.
type Log struct {
	// Name is the file's name in the bundle, without ".log".
	Name string
	// Path is the log file. Every Ginkgo process can read it, whichever
	// process writes it.
	Path string
}

// Files written into a bundle's directory.
const (
	ObjectsFile = "objects.yaml"
	EventsFile  = "events.txt"
)

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Dir is the directory below artifacts that the bundle of a spec named
// specName (a Ginkgo report's FullText) is written to:
// <artifacts>/failures/<spec name made safe for a file name>.
func Dir(artifacts, specName string) string {
	name := strings.Trim(unsafeChars.ReplaceAllString(specName, "-"), "-")
	if len(name) > 120 {
		name = name[:120]
	}
	return filepath.Join(artifacts, FailuresDir, name)
}

// Write writes objects.yaml (every namespaced object in the spec's
// namespace but events, each as Sanitize leaves it: a Secret's values
// replaced by their lengths and hashes, without last-applied annotations
// and managed fields), events.txt (the namespace's events in time order)
// and <log>.log for each of Logs (LogWindow) into dir. dir and its files
// are the caller's alone (OpenDir, WriteFile): directories 0700, files
// 0600, a symbolic link in a file's place removed, not followed. It
// writes what it can and returns every error.
func (b Bundle) Write(ctx context.Context, dir string) error {
	root, err := OpenDir(dir)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }()
	objects, err := b.objects(ctx)
	if err == nil {
		err = writeFile(root, ObjectsFile, objects)
	}
	errs := []error{err}
	events, err := b.events(ctx)
	if err == nil {
		err = writeFile(root, EventsFile, events)
	}
	errs = append(errs, err)
	for _, l := range b.Logs {
		lines, err := LogWindow(l.Path, b.Start, b.End)
		errs = append(errs, err, writeFile(root, l.Name+".log", lines))
	}
	return errors.Join(errs...)
}

// objects is objects.yaml: every namespaced object of the namespace but
// events, as Sanitize leaves it.
func (b Bundle) objects(ctx context.Context) ([]byte, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(b.Config)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(b.Config)
	if err != nil {
		return nil, err
	}
	lists, err := dc.ServerPreferredNamespacedResources()
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("discovering resources: %w", err)
	}
	var out strings.Builder
	fmt.Fprintf(&out, "# objects in namespace %s at %s\n", b.Namespace, time.Now().Format(time.RFC3339))
	out.WriteString("# A Secret's values are shown as their lengths and the start of their SHA-256, not as themselves;\n" +
		"# last-applied-configuration annotations and managed fields are left out.\n")
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if !slices.Contains(r.Verbs, "list") || r.Name == "events" {
				continue
			}
			items, err := dyn.Resource(gv.WithResource(r.Name)).Namespace(b.Namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				fmt.Fprintf(&out, "# listing %s.%s: %v\n", r.Name, gv.Group, err)
				continue
			}
			for _, it := range items.Items {
				// A list's items need not name their kind; Sanitize
				// knows a Secret by it.
				if it.GetKind() == "" {
					it.SetGroupVersionKind(gv.WithKind(r.Kind))
				}
				data, err := yaml.Marshal(Sanitize(&it).Object)
				if err != nil {
					continue
				}
				out.WriteString("---\n")
				out.Write(data)
			}
		}
	}
	return []byte(out.String()), nil
}

// events is events.txt: the namespace's events in time order.
func (b Bundle) events(ctx context.Context) ([]byte, error) {
	cs, err := kubernetes.NewForConfig(b.Config)
	if err != nil {
		return nil, err
	}
	events, err := cs.CoreV1().Events(b.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing events: %w", err)
	}
	items := events.Items
	sort.Slice(items, func(i, j int) bool { return eventTime(items[i]).Before(eventTime(items[j])) })
	var out strings.Builder
	for _, e := range items {
		fmt.Fprintf(&out, "%s\t%s\t%s\t%s/%s\t%s\n", eventTime(e).Format(time.RFC3339Nano), e.Type, e.Reason,
			e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message)
	}
	return []byte(out.String()), nil
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	}
	return e.CreationTimestamp.Time
}
