package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeharness/kubeharness/harness/bundle"
	"github.com/kubeharness/kubeharness/operator/certs"
)

// Bundle is what a person needs to debug one failed spec of this suite:
// harness/bundle's objects, events and manager log window, and on real
// nodes the manager replicas' own logs.
type Bundle struct {
	Cluster   *Cluster
	Namespace string
	Start     time.Time
	End       time.Time
}

// BundleDir is the directory a spec's bundle is written to below artifacts.
func BundleDir(artifacts, specName string) string { return bundle.Dir(artifacts, specName) }

// Write writes objects.yaml (every namespaced object in the spec's
// namespace), events.txt and manager.log (the manager's lines during the
// spec) into dir. It writes what it can and returns every error.
func (b Bundle) Write(ctx context.Context, dir string) error {
	hb := bundle.Bundle{Config: b.Cluster.Config, Namespace: b.Namespace, Start: b.Start, End: b.End}
	if b.Cluster.ManagerLogFile != "" {
		hb.Logs = append(hb.Logs, bundle.Log{Name: "manager", Path: b.Cluster.ManagerLogFile})
	}
	errs := []error{hb.Write(ctx, dir)}
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
