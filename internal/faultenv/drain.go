package faultenv

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/kubeharness/kubeharness/internal/operatortest"
)

// DrainNamespace deletes every object in namespace, as the namespace
// controller does for a deleted namespace, and returns once none is left:
// every finalizer has been run. It does not wait out the namespace
// controller's fixed five-second grace before it starts, so specs that
// prove "nothing holds the namespace" spend their time on what they test.
// When objects are still there after timeout, the error names them and
// their finalizers.
func DrainNamespace(ctx context.Context, cfg *rest.Config, namespace string, timeout time.Duration) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return err
	}
	lists, err := dc.ServerPreferredNamespacedResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return fmt.Errorf("discovering namespaced resources: %w", err)
	}
	var gvrs []schema.GroupVersionResource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if slices.Contains(r.Verbs, "list") && slices.Contains(r.Verbs, "deletecollection") {
				gvrs = append(gvrs, gv.WithResource(r.Name))
			}
		}
	}
	background := metav1.DeletePropagationBackground
	deleteAll := func(ctx context.Context, gvr schema.GroupVersionResource) error {
		err := mc.Resource(gvr).Namespace(namespace).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &background}, metav1.ListOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting every %s in %s: %w", gvr.GroupResource(), namespace, err)
		}
		return nil
	}
	for _, gvr := range gvrs {
		if err := deleteAll(ctx, gvr); err != nil {
			return err
		}
	}
	// Controllers finishing their work (finalizers, rollouts winding down)
	// write Events and may create objects after the first sweep; like the
	// namespace controller, every poll deletes again what is not yet going.
	var left []string
	err = wait.PollUntilContextTimeout(ctx, operatortest.Poll, timeout, true, func(ctx context.Context) (bool, error) {
		left = left[:0]
		for _, gvr := range gvrs {
			l, err := mc.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				left = append(left, fmt.Sprintf("%s: listing: %v", gvr.GroupResource(), err))
				continue
			}
			again := false
			for _, o := range l.Items {
				left = append(left, fmt.Sprintf("%s %s (finalizers %v, deleting since %v)", gvr.GroupResource(), o.Name, o.Finalizers, o.DeletionTimestamp))
				again = again || o.DeletionTimestamp == nil
			}
			if again {
				if err := deleteAll(ctx, gvr); err != nil {
					return false, err
				}
			}
		}
		return len(left) == 0, nil
	})
	if err != nil {
		if len(left) == 0 {
			return err
		}
		return errors.New("namespace " + namespace + " still holds, " + timeout.String() + " after everything in it was deleted:\n  " + strings.Join(left, "\n  "))
	}
	return nil
}
