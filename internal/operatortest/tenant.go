package operatortest

import (
	"context"
	"errors"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Tenant is a user who holds only what a namespace Role grants: the
// identity specs use to prove that the operator, which holds more, never
// does for a user what the user could not do.
type Tenant struct {
	// User is the tenant's username; the only group is system:authenticated.
	User   string
	Client client.Client

	admin  client.Client
	grants []client.Object
}

// RBACPropagation bounds how long the API server's authorizer takes to see
// a new Role and RoleBinding.
const RBACPropagation = 10 * time.Second

// NewTenant grants user the rules in namespace (a Role and a RoleBinding
// named after the user), or cluster-wide when namespace is empty (a
// ClusterRole and a ClusterRoleBinding, which Revoke deletes), and returns a
// client that impersonates the user. It returns once the API server
// authorizes the first rule's first verb.
func NewTenant(ctx context.Context, admin client.Client, cfg *rest.Config, scheme *runtime.Scheme, namespace, user string,
	rules ...rbacv1.PolicyRule) (*Tenant, error) {
	name := "kubeharness-tenant-" + user
	var role, binding client.Object
	roleRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}
	subjects := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}
	if namespace == "" {
		roleRef.Kind = "ClusterRole"
		role = &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
		binding = &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: roleRef, Subjects: subjects}
	} else {
		role = &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Rules: rules}
		binding = &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, RoleRef: roleRef, Subjects: subjects}
	}
	t := &Tenant{User: user, admin: admin}
	for _, obj := range []client.Object{role, binding} {
		if err := admin.Create(ctx, obj); err != nil {
			return nil, fmt.Errorf("granting %s: creating %T %s: %w", user, obj, client.ObjectKeyFromObject(obj), err)
		}
		t.grants = append(t.grants, obj)
	}
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	cl, err := client.New(c, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	t.Client = cl
	if len(rules) > 0 && len(rules[0].Verbs) > 0 && len(rules[0].Resources) > 0 {
		if err := waitAuthorized(ctx, admin, user, namespace, rules[0]); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Revoke deletes the tenant's Role and binding. Namespaced ones also go
// with their namespace; cluster-wide ones only so.
func (t *Tenant) Revoke(ctx context.Context) error {
	var errs []error
	for _, obj := range t.grants {
		errs = append(errs, client.IgnoreNotFound(t.admin.Delete(ctx, obj)))
	}
	return errors.Join(errs...)
}

func waitAuthorized(ctx context.Context, admin client.Client, user, namespace string, rule rbacv1.PolicyRule) error {
	attrs := &authorizationv1.ResourceAttributes{
		Namespace: namespace, Verb: rule.Verbs[0], Resource: rule.Resources[0],
	}
	if len(rule.APIGroups) > 0 {
		attrs.Group = rule.APIGroups[0]
	}
	if len(rule.ResourceNames) > 0 {
		attrs.Name = rule.ResourceNames[0]
	}
	deadline := time.Now().Add(RBACPropagation)
	for {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"system:authenticated"}, ResourceAttributes: attrs,
		}}
		if err := admin.Create(ctx, review); err != nil {
			return fmt.Errorf("asking whether %s may %s %s: %w", user, attrs.Verb, attrs.Resource, err)
		}
		if review.Status.Allowed {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s was still not allowed to %s %s in %s %s after its RoleBinding was created: %s",
				user, attrs.Verb, attrs.Resource, namespace, RBACPropagation, review.Status.Reason)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(Poll):
		}
	}
}
