package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/kubeharness/kubeharness/webhook/certs"
)

// Bundle is what a person needs to debug one failed spec.
type Bundle struct {
	Cluster   *Cluster
	Namespace string
	Start     time.Time
	End       time.Time
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// BundleDir is the directory a spec's bundle is written to below artifacts.
func BundleDir(artifacts, specName string) string {
	name := strings.Trim(unsafeChars.ReplaceAllString(specName, "-"), "-")
	if len(name) > 120 {
		name = name[:120]
	}
	return filepath.Join(artifacts, "failures", name)
}

// Write writes objects.yaml (every namespaced object in the spec's
// namespace), events.txt and manager.log (the manager's lines during the
// spec) into dir. It writes what it can and returns every error.
func (b Bundle) Write(ctx context.Context, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var errs []error
	errs = append(errs, b.writeObjects(ctx, filepath.Join(dir, "objects.yaml")))
	errs = append(errs, b.writeEvents(ctx, filepath.Join(dir, "events.txt")))
	if b.Cluster.ManagerLogFile != "" {
		lines, err := LogWindow(b.Cluster.ManagerLogFile, b.Start, b.End)
		errs = append(errs, err, os.WriteFile(filepath.Join(dir, "manager.log"), lines, 0o644))
	}
	if b.Cluster.RealNodes && b.Cluster.Clientset != nil {
		errs = append(errs, b.writeManagerPodLogs(ctx, dir))
	}
	return errors.Join(errs...)
}

// writeManagerPodLogs writes manager-<pod>.log for every manager replica of
// a deployed manager: its lines since the spec started, and the previous
// container's when it restarted.
func (b Bundle) writeManagerPodLogs(ctx context.Context, dir string) error {
	pods, err := b.Cluster.Clientset.CoreV1().Pods(certs.DefaultNamespace).List(ctx, metav1.ListOptions{LabelSelector: ManagerSelector})
	if err != nil {
		return fmt.Errorf("listing manager pods: %w", err)
	}
	since := metav1.NewTime(b.Start.Add(-time.Second))
	var errs []error
	for _, p := range pods.Items {
		var out []byte
		for _, previous := range []bool{true, false} {
			raw, err := b.Cluster.Clientset.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{
				Container: ManagerContainer, SinceTime: &since, Previous: previous, Timestamps: true,
			}).DoRaw(ctx)
			if err != nil {
				if !previous {
					errs = append(errs, fmt.Errorf("logs of %s: %w", p.Name, err))
				}
				continue
			}
			if previous {
				out = append(out, "--- previous container ---\n"...)
			}
			out = append(out, raw...)
		}
		errs = append(errs, os.WriteFile(filepath.Join(dir, "manager-"+p.Name+".log"), out, 0o644))
	}
	return errors.Join(errs...)
}

func (b Bundle) writeObjects(ctx context.Context, path string) error {
	dc, err := discovery.NewDiscoveryClientForConfig(b.Cluster.Config)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(b.Cluster.Config)
	if err != nil {
		return err
	}
	lists, err := dc.ServerPreferredNamespacedResources()
	if err != nil && len(lists) == 0 {
		return fmt.Errorf("discovering resources: %w", err)
	}
	var out strings.Builder
	fmt.Fprintf(&out, "# objects in namespace %s at %s\n", b.Namespace, time.Now().Format(time.RFC3339))
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if !hasVerb(r, "list") || r.Name == "events" {
				continue
			}
			items, err := dyn.Resource(gv.WithResource(r.Name)).Namespace(b.Namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				fmt.Fprintf(&out, "# listing %s.%s: %v\n", r.Name, gv.Group, err)
				continue
			}
			for _, it := range items.Items {
				unstructured.RemoveNestedField(it.Object, "metadata", "managedFields")
				data, err := yaml.Marshal(it.Object)
				if err != nil {
					continue
				}
				out.WriteString("---\n")
				out.Write(data)
			}
		}
	}
	return os.WriteFile(path, []byte(out.String()), 0o644)
}

func (b Bundle) writeEvents(ctx context.Context, path string) error {
	events, err := b.Cluster.Clientset.CoreV1().Events(b.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing events: %w", err)
	}
	items := events.Items
	sort.Slice(items, func(i, j int) bool { return eventTime(items[i]).Before(eventTime(items[j])) })
	var out strings.Builder
	for _, e := range items {
		fmt.Fprintf(&out, "%s\t%s\t%s\t%s/%s\t%s\n", eventTime(e).Format(time.RFC3339Nano), e.Type, e.Reason,
			e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message)
	}
	return os.WriteFile(path, []byte(out.String()), 0o644)
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

func hasVerb(r metav1.APIResource, verb string) bool {
	for _, v := range r.Verbs {
		if v == verb {
			return true
		}
	}
	return false
}
