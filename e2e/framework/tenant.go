package framework

import (
	"context"
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
	// User is the tenant's username; Groups holds only system:authenticated.
	User   string
	Client client.Client
}

// RBACPropagation bounds how long the API server's authorizer takes to see
// a new Role and RoleBinding.
const RBACPropagation = 10 * time.Second

// NewTenant grants user the rules in namespace (a Role and a RoleBinding
// named after the user) and returns a client that impersonates the user.
// It returns once the API server authorizes the first rule's first verb.
func NewTenant(ctx context.Context, admin client.Client, cfg *rest.Config, scheme *runtime.Scheme, namespace, user string,
	rules ...rbacv1.PolicyRule) (*Tenant, error) {
	name := "tenant-" + user
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Rules: rules}
	if err := admin.Create(ctx, role); err != nil {
		return nil, fmt.Errorf("creating Role %s/%s: %w", namespace, name, err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if err := admin.Create(ctx, binding); err != nil {
		return nil, fmt.Errorf("creating RoleBinding %s/%s: %w", namespace, name, err)
	}
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	cl, err := client.New(c, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	if len(rules) > 0 && len(rules[0].Verbs) > 0 && len(rules[0].Resources) > 0 {
		if err := waitAuthorized(ctx, admin, user, namespace, rules[0]); err != nil {
			return nil, err
		}
	}
	return &Tenant{User: user, Client: cl}, nil
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
