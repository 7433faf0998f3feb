/*
Copyright 2026.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	boardv1 "example.com/noticeboard/api/v1"
)

// NoticeReconciler reconciles a Notice object
type NoticeReconciler struct {
	client.Client
	Scheme *runtime.Scheme
}

// +kubebuilder:rbac:groups=board.example.com,resources=notices,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=board.example.com,resources=notices/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=board.example.com,resources=notices/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update

// Reconcile is part of the main kubernetes reconciliation loop which aims to
// move the current state of the cluster closer to the desired state.
// Reconcile publishes a Notice as a ConfigMap named <notice>-notice in
// its namespace, owned by the Notice, and records that in the Notice's
// Available condition.
//
// For more details, check Reconcile and its Result here:
// - https://pkg.go.dev/sigs.k8s.io/controller-runtime/pkg/reconcile
func (r *NoticeReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)

	notice := &boardv1.Notice{}
	if err := r.Get(ctx, req.NamespacedName, notice); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName(notice), Namespace: notice.Namespace}}
	op, err := controllerutil.CreateOrUpdate(ctx, r.Client, cm, func() error {
		cm.Data = map[string]string{"message": notice.Spec.Message}
		return controllerutil.SetControllerReference(notice, cm, r.Scheme)
	})
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("publishing notice %s: %w", req.NamespacedName, err)
	}
	if op != controllerutil.OperationResultNone {
		log.Info("Published the notice", "configMap", cm.Name, "operation", op)
	}

	changed := meta.SetStatusCondition(&notice.Status.Conditions, metav1.Condition{
		Type: "Available", Status: metav1.ConditionTrue, Reason: "Published",
		Message: "published in ConfigMap " + cm.Name, ObservedGeneration: notice.Generation,
	})
	if changed {
		if err := r.Status().Update(ctx, notice); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// ConfigMapName is the name of the ConfigMap a Notice is published in.
func ConfigMapName(notice *boardv1.Notice) string { return notice.Name + "-notice" }

// SetupWithManager sets up the controller with the Manager.
func (r *NoticeReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&boardv1.Notice{}).
		Owns(&corev1.ConfigMap{}).
		Named("notice").
		Complete(r)
}
