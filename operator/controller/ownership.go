package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ReasonOwnershipConflict: a child the controller would create exists and is
// not controlled by the object asking for it. The controller leaves it alone.
const ReasonOwnershipConflict = "OwnershipConflict"

// NotOwnedError says that an object a controller would create or update
// already exists and is not controlled by the owner that asks for it.
//
// The controllers never adopt: the people who create Playbooks and
// AppServices may hold far less privilege than the operator, so adopting an
// existing object would let them overwrite (and, through garbage collection,
// delete) objects they could not touch themselves.
type NotOwnedError struct {
	// Kind and Key name the existing object.
	Kind string
	Key  types.NamespacedName
	// Controller describes the object's current controller, or is empty
	// when it has none.
	Controller string
	// Owner is the object that asked for it, e.g. "AppService web".
	Owner string
}

func (e *NotOwnedError) Error() string {
	who := "has no controller"
	if e.Controller != "" {
		who = "is controlled by " + e.Controller
	}
	return fmt.Sprintf("%s %s already exists and %s; %s does not adopt objects it did not create and leaves it alone: "+
		"delete or rename that %s, or give the %s another name", e.Kind, e.Key, who, e.Owner, e.Kind, strings.SplitN(e.Owner, " ", 2)[0])
}

// IsNotOwned reports whether err is, or wraps, a NotOwnedError, and returns it.
func IsNotOwned(err error) (*NotOwnedError, bool) {
	var e *NotOwnedError
	return e, errors.As(err, &e)
}

// controlledCreateOrUpdate is controllerutil.CreateOrUpdate for a child of
// owner: it creates obj with owner as its controller, or updates it when
// owner already controls it. An existing object owner does not control is
// neither changed nor adopted: the call returns a NotOwnedError.
func controlledCreateOrUpdate(ctx context.Context, c client.Client, scheme *runtime.Scheme, owner, obj client.Object, kind string,
	mutate func() error) (controllerutil.OperationResult, error) {
	return controllerutil.CreateOrUpdate(ctx, c, obj, func() error {
		if obj.GetResourceVersion() != "" && !metav1.IsControlledBy(obj, owner) {
			e := &NotOwnedError{Kind: kind, Key: client.ObjectKeyFromObject(obj),
				Owner: fmt.Sprintf("%s %s", ownerKind(owner, scheme), owner.GetName())}
			if ref := metav1.GetControllerOf(obj); ref != nil {
				e.Controller = fmt.Sprintf("%s %s (uid %s)", ref.Kind, ref.Name, ref.UID)
			}
			return e
		}
		if err := mutate(); err != nil {
			return err
		}
		return controllerutil.SetControllerReference(owner, obj, scheme)
	})
}

func ownerKind(owner client.Object, scheme *runtime.Scheme) string {
	gvks, _, err := scheme.ObjectKinds(owner)
	if err != nil || len(gvks) == 0 {
		return fmt.Sprintf("%T", owner)
	}
	return gvks[0].Kind
}

// byName enqueues the object named name(child) in the child's namespace
// whenever a child-shaped object changes, owned or not. Owns() alone maps
// only objects the owner controls, so an owner blocked by an unowned object
// would not hear that the object was deleted or renamed; this brings it back.
// name returns "" for objects that cannot be children.
func byName(name func(child string) string) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		n := name(o.GetName())
		if n == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: n}}}
	})
}
