package deploy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/operator/certs"
)

const (
	// CoverageConfig is config/default with the manager's coverage
	// counters written to a PersistentVolumeClaim (CoverageClaim): what
	// make e2e PROVIDER=kind COVER=1 deploys, with a manager built with
	// -cover. Nothing else applies it.
	CoverageConfig = "config/coverage"
	// CoverageClaim is the claim CoverageConfig's manager writes its
	// counters to, a directory per Pod.
	CoverageClaim = "kubeharness-coverage"
	// coverageStop bounds how long the manager's Pods may take to stop.
	coverageStop = 2 * time.Minute
)

// ManagerCoverFlags are the go build flags of a manager built with -cover,
// as the Makefile's COVER_BUILD builds bin/manager: atomic counters (which
// harness/coverage/flush writes while it runs), the operator's and the
// webhooks' packages and the manager's main (without which Go keeps no
// coverage of the binary).
var ManagerCoverFlags = []string{"-cover", "-covermode=atomic", "-coverpkg=./cmd/manager,./operator/...,./webhook/..."}

// CollectKindCoverage stops the manager CoverageConfig deployed (scales
// its Deployment to 0 and waits until no Pod of it is left, so that every
// replica wrote its counters at its stop: a replica that was killed left
// its last snapshot, at most 10 s old) and copies the coverage claim's
// directory out of the kind node that holds it, a directory per Pod, into
// dir. With restore it scales the Deployment back afterwards, for a
// cluster that is kept.
func CollectKindCoverage(ctx context.Context, c client.Client, dir string, restore bool, out io.Writer) error {
	if out == nil {
		out = io.Discard
	}
	ctx, cancel := context.WithTimeout(ctx, coverageStop)
	defer cancel()
	key := types.NamespacedName{Namespace: certs.DefaultNamespace, Name: ManagerDeployment}
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, key, d); err != nil {
		return fmt.Errorf("the manager's Deployment: %w", err)
	}
	replicas := d.Spec.Replicas
	if err := scale(ctx, c, d, 0); err != nil {
		return err
	}
	stopErr := waitNoManagerPods(ctx, c)
	node, path, err := claimDirectory(ctx, c)
	if err == nil {
		err = copyFromNode(ctx, node, path, dir)
	}
	if err == nil {
		fmt.Fprintf(out, "the deployed manager's coverage: %s:%s copied to %s\n", node, path, dir)
	}
	if restore {
		if rerr := c.Get(ctx, key, d); rerr != nil {
			err = errors.Join(err, rerr)
		} else if replicas != nil {
			err = errors.Join(err, scale(ctx, c, d, *replicas))
		}
	}
	return errors.Join(stopErr, err)
}

func scale(ctx context.Context, c client.Client, d *appsv1.Deployment, n int32) error {
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = &n
	if err := c.Patch(ctx, d, patch); err != nil {
		return fmt.Errorf("scaling the manager's Deployment to %d: %w", n, err)
	}
	return nil
}

// waitNoManagerPods waits until no Pod of the manager is left, so that
// each has run its final coverage flush.
func waitNoManagerPods(ctx context.Context, c client.Client) error {
	sel, err := labels.Parse(ManagerSelector)
	if err != nil {
		return err
	}
	for {
		pods := &corev1.PodList{}
		err := c.List(ctx, pods, client.InNamespace(certs.DefaultNamespace), client.MatchingLabelsSelector{Selector: sel})
		if err == nil && len(pods.Items) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the manager's Pods did not stop within %s (%d left, last error %v): their last counters may be missing", coverageStop, len(pods.Items), err)
		case <-time.After(poll):
		}
	}
}

// claimDirectory is the node, and the directory on it, of the coverage
// claim's volume: local-path (kind's default StorageClass) makes a
// hostPath or local volume bound to one node.
func claimDirectory(ctx context.Context, c client.Client) (node, path string, err error) {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: certs.DefaultNamespace, Name: CoverageClaim}, pvc); err != nil {
		return "", "", fmt.Errorf("the coverage claim: %w", err)
	}
	if pvc.Spec.VolumeName == "" {
		return "", "", fmt.Errorf("the coverage claim %s is not bound (%s): no manager Pod ever ran with it", CoverageClaim, pvc.Status.Phase)
	}
	pv := &corev1.PersistentVolume{}
	if err := c.Get(ctx, types.NamespacedName{Name: pvc.Spec.VolumeName}, pv); err != nil {
		return "", "", fmt.Errorf("the coverage claim's volume: %w", err)
	}
	switch {
	case pv.Spec.HostPath != nil:
		path = pv.Spec.HostPath.Path
	case pv.Spec.Local != nil:
		path = pv.Spec.Local.Path
	default:
		return "", "", fmt.Errorf("volume %s of the coverage claim is neither hostPath nor local: not a directory on a kind node", pv.Name)
	}
	if na := pv.Spec.NodeAffinity; na != nil && na.Required != nil {
		for _, term := range na.Required.NodeSelectorTerms {
			for _, e := range term.MatchExpressions {
				if e.Key == corev1.LabelHostname && e.Operator == corev1.NodeSelectorOpIn && len(e.Values) == 1 {
					return e.Values[0], path, nil
				}
			}
		}
	}
	return "", "", fmt.Errorf("volume %s of the coverage claim is bound to no one node", pv.Name)
}

// copyFromNode copies the directory path of the kind node container node
// (named as the Kubernetes node) into dir.
func copyFromNode(ctx context.Context, node, path, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if b, err := exec.CommandContext(ctx, "docker", "cp", node+":"+path+"/.", dir).CombinedOutput(); err != nil {
		return fmt.Errorf("docker cp %s:%s: %v\n%s", node, path, err, b)
	}
	return nil
}
