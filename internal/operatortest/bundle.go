package operatortest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeharness/kubeharness/harness/bundle"
	"github.com/kubeharness/kubeharness/harness/cluster"
	"github.com/kubeharness/kubeharness/internal/deploy"
	"github.com/kubeharness/kubeharness/operator/certs"
)

// CollectOperatorLogs is a failure bundle's part that only this operator
// knows (harness/suite's Failures.Collect): the lines the manager and the
// VirtualMachine controller logged during the spec, as manager.log and
// vm-controller.log, where they write JSON logs on this machine, and on
// RealNodes each manager replica's own log since the spec began, as
// manager-<pod>.log. of is called when a spec fails, so it may return what
// a BeforeSuite set. The files are private, as the rest of the bundle
// (bundle.WriteFile).
func CollectOperatorLogs(of func() *cluster.Cluster) func(ctx context.Context, dir string, report types.SpecReport) error {
	return func(ctx context.Context, dir string, report types.SpecReport) error {
		c := of()
		op := OperatorOf(c)
		if op == nil {
			return nil
		}
		var errs []error
		for name, file := range map[string]string{"manager.log": op.ManagerLogFile, "vm-controller.log": op.VMControllerLogFile} {
			if file == "" {
				continue
			}
			lines, err := bundle.LogWindow(file, report.StartTime, report.EndTime)
			errs = append(errs, err, bundle.WriteFile(dir, name, lines))
		}
		if _, ok := cluster.Ability[RealNodes](c); ok && c.Clientset != nil {
			errs = append(errs, writeManagerPodLogs(ctx, c, report.StartTime, dir))
		}
		return errors.Join(errs...)
	}
}

// writeManagerPodLogs writes manager-<pod>.log for every manager replica of
// a deployed manager: its lines since the spec started, and the previous
// container's when it restarted.
func writeManagerPodLogs(ctx context.Context, c *cluster.Cluster, start time.Time, dir string) error {
	pods, err := c.Clientset.CoreV1().Pods(certs.DefaultNamespace).List(ctx, metav1.ListOptions{LabelSelector: deploy.ManagerSelector})
	if err != nil {
		return fmt.Errorf("listing manager pods: %w", err)
	}
	since := metav1.NewTime(start.Add(-time.Second))
	var errs []error
	for _, p := range pods.Items {
		var out []byte
		for _, previous := range []bool{true, false} {
			raw, err := c.Clientset.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{
				Container: deploy.ManagerContainer, SinceTime: &since, Previous: previous, Timestamps: true,
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
		errs = append(errs, bundle.WriteFile(dir, "manager-"+p.Name+".log", out))
	}
	return errors.Join(errs...)
}
