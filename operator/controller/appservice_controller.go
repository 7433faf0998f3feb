package controller

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	appv1 "github.com/kubeharness/kubeharness/operator/api/app/v1"
)

const (
	// AppServiceLabel selects an AppService's Pods.
	AppServiceLabel = "app.kubeharness.dev/appservice"
	// AppContainerName is the container running spec.image.
	AppContainerName = "app"
)

// Condition types and reasons of AppServices, besides the Deployment's
// conditions mirrored into the status.
const (
	// ConditionReconciled is True when the Deployment and Service are in
	// place as the spec asks. False with ReasonOwnershipConflict when an
	// object of the same name that the AppService does not control is in
	// the way, or ReasonChildRejected when the API server refused a child
	// (e.g. a nodePort another Service holds).
	ConditionReconciled = "Reconciled"
	// ReasonChildrenInPlace: the Deployment and Service are as the spec asks.
	ReasonChildrenInPlace = "ChildrenInPlace"
	// ReasonChildRejected: the API server refused to create or update a child.
	ReasonChildRejected = "ChildRejected"
)

// rejectedRetry is how often a child the API server refused is tried again
// without a spec change: what it conflicted with (a node port another
// Service holds) may go away.
const rejectedRetry = time.Minute

// AppServiceReconciler runs an AppService as an owned Deployment and an
// owned NodePort Service, repairs drift on both and mirrors the
// Deployment's status. Deleting the AppService removes both through their
// owner references (the garbage collector).
//
// It never adopts: a Deployment or Service of the AppService's name that the
// AppService does not control is left untouched and reported in the
// Reconciled condition and a Warning Event. The Pods run as the namespace's
// default ServiceAccount with no API token mounted, whatever the Deployment
// says: an AppService's author gets the API access of nobody.
type AppServiceReconciler struct {
	client.Client
	Recorder events.EventRecorder
	// Workers is how many AppServices are reconciled at once; 0 means 1.
	Workers int
}

// +kubebuilder:rbac:groups=app.kubeharness.dev,resources=appservices,verbs=list;watch
// +kubebuilder:rbac:groups=app.kubeharness.dev,resources=appservices/status,verbs=patch
// +kubebuilder:rbac:groups=app.kubeharness.dev,resources=appservices/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=list;watch;create;update
// +kubebuilder:rbac:groups="",resources=services,verbs=list;watch;create;update

// Reconcile brings one AppService's children to their desired state.
func (r *AppServiceReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	app := &appv1.AppService{}
	if err := r.Get(ctx, req.NamespacedName, app); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !app.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // the garbage collector removes the children
	}
	deploy, err := r.reconcileDeployment(ctx, app)
	if err == nil {
		err = r.reconcileService(ctx, app)
	}
	reconciled := metav1.Condition{Type: ConditionReconciled, Status: metav1.ConditionTrue, Reason: ReasonChildrenInPlace,
		Message: fmt.Sprintf("Deployment and Service %s are in place", app.Name)}
	var result ctrl.Result
	notOwned, conflict := IsNotOwned(err)
	switch {
	case conflict:
		// Nothing to retry: the watch on objects of the children's names
		// brings the AppService back when the one in the way changes.
		reconciled.Status, reconciled.Reason, reconciled.Message = metav1.ConditionFalse, ReasonOwnershipConflict, notOwned.Error()
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return ctrl.Result{}, nil // the namespace's deletion takes the AppService too
	case apierrors.IsInvalid(err) || apierrors.IsForbidden(err):
		reconciled.Status, reconciled.Reason, reconciled.Message = metav1.ConditionFalse, ReasonChildRejected, err.Error()
		result.RequeueAfter = rejectedRetry
	case err != nil:
		return ctrl.Result{}, err
	}
	return result, r.updateStatus(ctx, app, deploy, reconciled)
}

func selectorLabels(app *appv1.AppService) map[string]string {
	return map[string]string{AppServiceLabel: app.Name}
}

func (r *AppServiceReconciler) reconcileDeployment(ctx context.Context, app *appv1.AppService) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: app.Name, Namespace: app.Namespace}}
	_, err := controlledCreateOrUpdate(ctx, r.Client, r.Scheme(), app, d, "Deployment", func() error {
		labels := selectorLabels(app)
		if d.Labels == nil {
			d.Labels = map[string]string{}
		}
		d.Labels[AppServiceLabel] = app.Name
		d.Spec.Replicas = ptr.To(ptr.Deref(app.Spec.Size, 1))
		if d.CreationTimestamp.IsZero() {
			// The selector is immutable; set it once.
			d.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
		}
		tmpl := &d.Spec.Template
		if tmpl.Labels == nil {
			tmpl.Labels = map[string]string{}
		}
		tmpl.Labels[AppServiceLabel] = app.Name
		// The author of an AppService may not be allowed to act as any
		// ServiceAccount: the Pods get the namespace's default one and no
		// token, so her image gains no API access through the operator.
		tmpl.Spec.ServiceAccountName, tmpl.Spec.DeprecatedServiceAccount = "", ""
		tmpl.Spec.AutomountServiceAccountToken = ptr.To(false)
		container := desiredContainer(app)
		// Keep what others (defaulting, injectors) set on our container;
		// own only the fields the AppService states.
		found := false
		for i := range tmpl.Spec.Containers {
			c := &tmpl.Spec.Containers[i]
			if c.Name != AppContainerName {
				continue
			}
			found = true
			c.Image, c.Env, c.Resources, c.Ports = container.Image, container.Env, container.Resources, container.Ports
		}
		if !found {
			tmpl.Spec.Containers = append(tmpl.Spec.Containers, container)
		}
		return nil
	})
	if err != nil {
		return d, fmt.Errorf("reconciling Deployment %s: %w", klog.KObj(d), err)
	}
	return d, nil
}

func desiredContainer(app *appv1.AppService) corev1.Container {
	c := corev1.Container{Name: AppContainerName, Image: app.Spec.Image, Env: app.Spec.Envs, Resources: app.Spec.Resources}
	for _, p := range app.Spec.Ports {
		port := p.Port
		if p.TargetPort.Type == intstr.Int && p.TargetPort.IntVal != 0 {
			port = p.TargetPort.IntVal
		}
		c.Ports = append(c.Ports, corev1.ContainerPort{Name: p.Name, ContainerPort: port, Protocol: protocolOrTCP(p.Protocol)})
	}
	return c
}

func protocolOrTCP(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}

func (r *AppServiceReconciler) reconcileService(ctx context.Context, app *appv1.AppService) error {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: app.Name, Namespace: app.Namespace}}
	_, err := controlledCreateOrUpdate(ctx, r.Client, r.Scheme(), app, svc, "Service", func() error {
		if svc.Labels == nil {
			svc.Labels = map[string]string{}
		}
		svc.Labels[AppServiceLabel] = app.Name
		svc.Spec.Type = corev1.ServiceTypeNodePort
		svc.Spec.Selector = selectorLabels(app)
		ports := make([]corev1.ServicePort, 0, len(app.Spec.Ports))
		for _, p := range app.Spec.Ports {
			p.Protocol = protocolOrTCP(p.Protocol)
			if p.TargetPort.Type == intstr.Int && p.TargetPort.IntVal == 0 {
				p.TargetPort = intstr.FromInt32(p.Port)
			}
			// Keep the node port the API server allocated, unless one is asked for.
			if p.NodePort == 0 {
				for _, cur := range svc.Spec.Ports {
					if cur.Port == p.Port && cur.Protocol == p.Protocol {
						p.NodePort = cur.NodePort
					}
				}
			}
			ports = append(ports, p)
		}
		svc.Spec.Ports = ports
		return nil
	})
	if err != nil {
		return fmt.Errorf("reconciling Service %s: %w", klog.KObj(svc), err)
	}
	return nil
}

// updateStatus mirrors d's status (when the AppService controls d) and sets
// reconciled, recording an Event when reconciled turns False.
func (r *AppServiceReconciler) updateStatus(ctx context.Context, app *appv1.AppService, d *appsv1.Deployment, reconciled metav1.Condition) error {
	if !metav1.IsControlledBy(d, app) {
		// Not ours (or not there): nothing of it is mirrored.
		d = &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: app.Name}}
	}
	status := appv1.AppServiceStatus{
		ObservedGeneration: app.Generation,
		Replicas:           d.Status.Replicas,
		ReadyReplicas:      d.Status.ReadyReplicas,
		Conditions:         append([]metav1.Condition(nil), app.Status.Conditions...),
	}
	if prev := meta.FindStatusCondition(app.Status.Conditions, ConditionReconciled); reconciled.Status == metav1.ConditionFalse &&
		(prev == nil || prev.Reason != reconciled.Reason || prev.Message != reconciled.Message) {
		r.Recorder.Eventf(app, nil, corev1.EventTypeWarning, reconciled.Reason, "Reconcile", "%s", reconciled.Message)
	}
	reconciled.ObservedGeneration = app.Generation
	meta.SetStatusCondition(&status.Conditions, reconciled)
	seen := map[string]bool{ConditionReconciled: true}
	for _, c := range d.Status.Conditions {
		seen[string(c.Type)] = true
		reason := c.Reason
		if reason == "" {
			reason = "Unknown"
		}
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{
			Type: string(c.Type), Status: metav1.ConditionStatus(c.Status), Reason: reason,
			Message: c.Message, ObservedGeneration: app.Generation,
		})
	}
	for _, c := range app.Status.Conditions {
		if !seen[c.Type] && c.Type != string(appsv1.DeploymentAvailable) {
			meta.RemoveStatusCondition(&status.Conditions, c.Type)
		}
	}
	if !seen[string(appsv1.DeploymentAvailable)] {
		// No deployment controller has reported yet (envtest runs none).
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{
			Type: string(appsv1.DeploymentAvailable), Status: metav1.ConditionUnknown, Reason: "DeploymentNotObserved",
			Message: fmt.Sprintf("Deployment %s has no Available condition yet", d.Name), ObservedGeneration: app.Generation,
		})
	}
	if equality.Semantic.DeepEqual(app.Status, status) {
		return nil
	}
	patch := client.MergeFrom(app.DeepCopy())
	app.Status = status
	if err := r.Status().Patch(ctx, app, patch); err != nil {
		return fmt.Errorf("patching status of AppService %s: %w", klog.KObj(app), err)
	}
	return nil
}

// SetupWithManager registers the controller with the manager.
func (r *AppServiceReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&appv1.AppService{}).
		// Every Deployment and Service, owned or not, brings back the
		// AppService of its name: one blocked by an object it does not
		// control hears when that object goes away.
		Watches(&appsv1.Deployment{}, byName(sameName)).
		Watches(&corev1.Service{}, byName(sameName)).
		Named("appservice").
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Workers, 1)}).
		Complete(r)
}

func sameName(name string) string { return name }
