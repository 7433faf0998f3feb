package deploy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeharness/kubeharness/operator/certs"
)

const (
	// DefaultConfig is the kustomization a real cluster gets.
	DefaultConfig = "config/default"
	// ManagerDeployment is the manager's Deployment in certs.DefaultNamespace.
	ManagerDeployment = "kubeharness-controller-manager"
	// ManagerContainer is the manager's container in that Deployment.
	ManagerContainer = "manager"
	// ManagerSelector selects the manager's Pods.
	ManagerSelector = "app.kubernetes.io/name=kubeharness,control-plane=controller-manager"
	// FieldOwner is the field manager kubeharness applies config/ with.
	FieldOwner = "kubeharness-deploy"
	// Rollout bounds how long the manager's Deployment may take to roll out.
	Rollout = 3 * time.Minute
	// crdEstablished bounds how long new CRDs may take to be served.
	crdEstablished = 30 * time.Second
)

// DeployOptions say what to deploy.
type DeployOptions struct {
	// Root is the repository root.
	Root string
	// Image is the manager image the Deployment runs.
	Image string
	// Out receives what changed; nil discards it.
	Out io.Writer
	// Config is the kustomization to apply: DefaultConfig unless set
	// (CoverageConfig for a manager built with -cover).
	Config string
}

// Deploy server-side applies config/default with the manager image set, CRDs
// first (waiting until they are served). Applying again changes only what
// differs, so an unchanged image does not restart the manager.
func Deploy(ctx context.Context, c client.Client, o DeployOptions) error {
	out := o.Out
	if out == nil {
		out = io.Discard
	}
	config := o.Config
	if config == "" {
		config = DefaultConfig
	}
	objs, err := Render(o.Root, config)
	if err != nil {
		return err
	}
	if err := setManagerImage(objs, o.Image, config); err != nil {
		return err
	}
	// CRDs and the namespace first: everything else may depend on them.
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int { return applyRank(a) - applyRank(b) })
	var crds []string
	for _, u := range objs {
		if applyRank(u) > 1 && len(crds) > 0 {
			if err := waitEstablished(ctx, c, crds); err != nil {
				return err
			}
			crds = nil
		}
		changed, err := apply(ctx, c, u)
		if err != nil {
			return fmt.Errorf("applying %s %s from %s: %w", u.GetKind(), u.GetName(), config, err)
		}
		if changed {
			fmt.Fprintf(out, "%s/%s configured\n", u.GetKind(), u.GetName())
		}
		if u.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, u.GetName())
		}
	}
	return nil
}

func applyRank(u *unstructured.Unstructured) int {
	switch u.GetKind() {
	case "CustomResourceDefinition":
		return 0
	case "Namespace":
		return 1
	case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
		return 3 // last: their Service has endpoints soonest that way
	}
	return 2
}

// apply server-side applies u and reports whether that changed the object.
// It compares the time on kubeharness's own managedFields entry, not the
// resourceVersion, which others (the manager injecting caBundle) may bump
// meanwhile.
func apply(ctx context.Context, c client.Client, u *unstructured.Unstructured) (bool, error) {
	before := &unstructured.Unstructured{}
	before.SetGroupVersionKind(u.GroupVersionKind())
	err := c.Get(ctx, client.ObjectKeyFromObject(u), before)
	if err != nil && !apierrors.IsNotFound(err) {
		return false, err
	}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u.DeepCopy()), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return false, err
	}
	after := &unstructured.Unstructured{}
	after.SetGroupVersionKind(u.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(u), after); err != nil {
		return false, err
	}
	if apierrors.IsNotFound(err) {
		return true, nil // created
	}
	// An object whose applied fields are only its name (a bare
	// ServiceAccount) gets no managedFields entry at all.
	was, had := appliedAt(before)
	now, has := appliedAt(after)
	return has && (!had || !was.Equal(now)), nil
}

// appliedAt is when kubeharness last changed obj through an apply.
func appliedAt(obj *unstructured.Unstructured) (time.Time, bool) {
	for _, m := range obj.GetManagedFields() {
		if m.Manager == FieldOwner && m.Operation == metav1.ManagedFieldsOperationApply && m.Time != nil {
			return m.Time.Time, true
		}
	}
	return time.Time{}, false
}

func setManagerImage(objs []*unstructured.Unstructured, image, config string) error {
	if image == "" {
		return errors.New("no manager image: build one with `make docker-build` and name it")
	}
	for _, u := range objs {
		if u.GetKind() != "Deployment" || u.GetName() != ManagerDeployment {
			continue
		}
		containers, _, err := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		if err != nil {
			return err
		}
		for i, raw := range containers {
			m, ok := raw.(map[string]any)
			if ok && m["name"] == ManagerContainer {
				m["image"] = image
				m["imagePullPolicy"] = string(corev1.PullIfNotPresent)
				containers[i] = m
				return unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers")
			}
		}
	}
	return fmt.Errorf("%s renders no Deployment %s with a container %q", config, ManagerDeployment, ManagerContainer)
}

func waitEstablished(ctx context.Context, c client.Client, names []string) error {
	ctx, cancel := context.WithTimeout(ctx, crdEstablished)
	defer cancel()
	for _, name := range names {
		for {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			err := c.Get(ctx, types.NamespacedName{Name: name}, crd)
			if err == nil && crdCondition(crd, apiextensionsv1.Established) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("CRD %s not established within %s (last error: %v)", name, crdEstablished, err)
			case <-time.After(poll):
			}
		}
	}
	// The client's REST mapper learns the new kinds on its next lookup miss.
	return nil
}

func crdCondition(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == t {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// WaitForRollout waits until every replica of the manager's Deployment runs
// the current template and is available.
func WaitForRollout(ctx context.Context, c client.Client) error {
	return WaitForDeployment(ctx, c, types.NamespacedName{Namespace: certs.DefaultNamespace, Name: ManagerDeployment})
}

// WaitForDeployment waits until every replica of the Deployment key runs
// its current template and is available.
func WaitForDeployment(ctx context.Context, c client.Client, key types.NamespacedName) error {
	ctx, cancel := context.WithTimeout(ctx, Rollout)
	defer cancel()
	var last string
	for {
		d := &appsv1.Deployment{}
		err := c.Get(ctx, key, d)
		switch {
		case err != nil:
			last = err.Error()
		case rolledOut(d):
			return nil
		default:
			want := int32(1)
			if d.Spec.Replicas != nil {
				want = *d.Spec.Replicas
			}
			last = fmt.Sprintf("%d of %d replicas updated, %d available (observed generation %d of %d)",
				d.Status.UpdatedReplicas, want, d.Status.AvailableReplicas, d.Status.ObservedGeneration, d.Generation)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("deployment %s did not roll out within %s: %s", key, Rollout, last)
		case <-time.After(time.Second):
		}
	}
}

// WaitForManager waits until the deployed manager has rolled out and its
// webhooks admit a dry-run Playbook through the API server.
func WaitForManager(ctx context.Context, c client.Client) error {
	if err := WaitForRollout(ctx, c); err != nil {
		return err
	}
	return WaitForWebhooks(ctx, c, nil)
}

func rolledOut(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	return d.Status.ObservedGeneration >= d.Generation &&
		d.Status.UpdatedReplicas == want && d.Status.Replicas == want && d.Status.AvailableReplicas == want
}

// Undeploy deletes what Deploy applied, webhook configurations first (so
// nothing is left calling a webhook that is gone) and CRDs last (which
// deletes every Playbook and AppService).
func Undeploy(ctx context.Context, c client.Client, root string, out io.Writer) error {
	return undeployConfig(ctx, c, root, DefaultConfig, out)
}

// undeployConfig deletes the objects the kustomization dir renders, in the
// reverse of the order they are applied in. Objects already gone, or of a
// kind the cluster no longer serves, are no error.
func undeployConfig(ctx context.Context, c client.Client, root, dir string, out io.Writer) error {
	if out == nil {
		out = io.Discard
	}
	objs, err := Render(root, dir)
	if err != nil {
		return err
	}
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int { return applyRank(b) - applyRank(a) })
	var errs []error
	for _, u := range objs {
		err := c.Delete(ctx, u, client.PropagationPolicy("Background"))
		switch {
		case err == nil:
			fmt.Fprintf(out, "%s/%s deleted\n", u.GetKind(), u.GetName())
		case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		default:
			errs = append(errs, fmt.Errorf("deleting %s %s: %w", u.GetKind(), u.GetName(), err))
		}
	}
	return errors.Join(errs...)
}
