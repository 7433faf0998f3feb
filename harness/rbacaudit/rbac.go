package rbacaudit

import (
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Config is a set of RBAC manifests: roles and the bindings that grant
// them. Add them with Add; other kinds are ignored.
type Config struct {
	roles    []*role
	bindings []binding
}

// role is a Role or a ClusterRole.
type role struct {
	ref    RoleRef
	source string
	rules  []rbacv1.PolicyRule
}

// RoleRef names a role: Namespace is empty for a ClusterRole.
type RoleRef struct {
	Kind, Namespace, Name string
}

func (r RoleRef) String() string {
	if r.Namespace == "" {
		return r.Kind + "/" + r.Name
	}
	return r.Kind + "/" + r.Namespace + "/" + r.Name
}

// binding is a RoleBinding (Namespace set) or a ClusterRoleBinding.
type binding struct {
	kind, namespace, name string
	source                string
	role                  RoleRef
	subjects              []rbacv1.Subject
}

func (b binding) String() string {
	if b.namespace == "" {
		return b.kind + "/" + b.name
	}
	return b.kind + "/" + b.namespace + "/" + b.name
}

// Add adds the RBAC objects among objs, which came from source (a
// directory or file, for messages).
func (c *Config) Add(source string, objs ...runtime.Object) error {
	for _, obj := range objs {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			typed, err := fromUnstructured(u)
			if err != nil {
				return fmt.Errorf("%s: %s %s: %w", source, u.GetKind(), u.GetName(), err)
			}
			if typed == nil {
				continue
			}
			obj = typed
		}
		switch o := obj.(type) {
		case *rbacv1.ClusterRole:
			c.roles = append(c.roles, &role{ref: RoleRef{Kind: "ClusterRole", Name: o.Name}, source: source, rules: o.Rules})
		case *rbacv1.Role:
			c.roles = append(c.roles, &role{ref: RoleRef{Kind: "Role", Namespace: o.Namespace, Name: o.Name}, source: source, rules: o.Rules})
		case *rbacv1.ClusterRoleBinding:
			c.bindings = append(c.bindings, binding{kind: "ClusterRoleBinding", name: o.Name, source: source,
				role: RoleRef{Kind: o.RoleRef.Kind, Name: o.RoleRef.Name}, subjects: o.Subjects})
		case *rbacv1.RoleBinding:
			ref := RoleRef{Kind: o.RoleRef.Kind, Name: o.RoleRef.Name}
			if ref.Kind == "Role" {
				ref.Namespace = o.Namespace
			}
			c.bindings = append(c.bindings, binding{kind: "RoleBinding", namespace: o.Namespace, name: o.Name, source: source,
				role: ref, subjects: o.Subjects})
		}
	}
	return nil
}

// fromUnstructured converts an RBAC object; nil for other kinds.
func fromUnstructured(u *unstructured.Unstructured) (runtime.Object, error) {
	if u.GroupVersionKind().Group != rbacv1.GroupName {
		return nil, nil
	}
	var obj runtime.Object
	switch u.GetKind() {
	case "ClusterRole":
		obj = &rbacv1.ClusterRole{}
	case "Role":
		obj = &rbacv1.Role{}
	case "ClusterRoleBinding":
		obj = &rbacv1.ClusterRoleBinding{}
	case "RoleBinding":
		obj = &rbacv1.RoleBinding{}
	default:
		return nil, nil
	}
	return obj, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj)
}

// Grant is one rule of a role as a binding grants it to one subject.
type Grant struct {
	// Subject is whom the binding names, as a username ("system:
	// serviceaccount:<namespace>:<name>" for a ServiceAccount) or, for a
	// Group subject, "group:<name>".
	Subject string
	Binding string
	Role    RoleRef
	// Source is where the role came from.
	Source string
	// Namespace is where the rule applies: a RoleBinding's namespace, or
	// empty for a ClusterRoleBinding (everywhere, and cluster-scoped
	// resources and non-resource URLs too).
	Namespace string
	// Index is the rule's position in the role.
	Index int
	Rule  rbacv1.PolicyRule
}

// Grants lists every rule every binding grants, binding by binding.
func (c *Config) Grants() []Grant {
	var out []Grant
	for _, b := range c.bindings {
		r := c.role(b.role)
		if r == nil {
			continue
		}
		for _, s := range b.subjects {
			for i, rule := range r.rules {
				out = append(out, Grant{
					Subject: subjectName(s, b.namespace), Binding: b.String(), Role: r.ref, Source: r.source,
					Namespace: b.namespace, Index: i, Rule: rule,
				})
			}
		}
	}
	return out
}

func (c *Config) role(ref RoleRef) *role {
	for _, r := range c.roles {
		if r.ref == ref {
			return r
		}
	}
	return nil
}

// subjectName is s as the username (or "group:" name) requests carry.
func subjectName(s rbacv1.Subject, bindingNamespace string) string {
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		ns := s.Namespace
		if ns == "" {
			ns = bindingNamespace
		}
		return "system:serviceaccount:" + ns + ":" + s.Name
	case rbacv1.GroupKind:
		return "group:" + s.Name
	default:
		return s.Name
	}
}

// Problems are what is wrong with the manifests whatever the requests:
// wildcards, roles no binding grants, and bindings to roles the manifests
// do not hold (whose rules cannot be audited).
func (c *Config) Problems() []Failure {
	var out []Failure
	for _, r := range c.roles {
		for i, rule := range r.rules {
			if fields := wildcards(rule); len(fields) > 0 {
				out = append(out, Failure{
					Kind: Wildcard, Role: r.ref.String(),
					What: fmt.Sprintf("rule %d (%s) has a wildcard in %s", i+1, describeRule(rule), strings.Join(fields, ", ")),
					Fix:  "name each API group, resource, verb and URL the rule needs instead (" + r.source + ")",
				})
			}
		}
		if !slices.ContainsFunc(c.bindings, func(b binding) bool { return b.role == r.ref }) {
			out = append(out, Failure{
				Kind: Unbound, Role: r.ref.String(),
				What: "no binding grants it",
				Fix:  "bind it to the subject that needs it, or delete it (" + r.source + ")",
			})
		}
	}
	for _, b := range c.bindings {
		if c.role(b.role) == nil {
			out = append(out, Failure{
				Kind: MissingRole, Role: b.role.String(),
				What: fmt.Sprintf("%s grants it, but it is not among the manifests audited", b),
				Fix:  "add the role's manifests to the audit, or bind a role of the manifests (" + b.source + ")",
			})
		}
	}
	return out
}

// wildcards names the fields of rule that hold a "*".
func wildcards(rule rbacv1.PolicyRule) []string {
	var out []string
	for _, f := range []struct {
		name   string
		values []string
	}{
		{"apiGroups", rule.APIGroups}, {"resources", rule.Resources}, {"verbs", rule.Verbs},
		{"resourceNames", rule.ResourceNames}, {"nonResourceURLs", rule.NonResourceURLs},
	} {
		if slices.ContainsFunc(f.values, func(v string) bool { return strings.Contains(v, "*") }) {
			out = append(out, f.name)
		}
	}
	return out
}

// describeRule is a rule in one line: "apps deployments [create get]",
// with its resource names or URLs.
func describeRule(rule rbacv1.PolicyRule) string {
	if len(rule.NonResourceURLs) > 0 {
		return fmt.Sprintf("%s [%s]", strings.Join(rule.NonResourceURLs, ","), strings.Join(rule.Verbs, " "))
	}
	groups := make([]string, len(rule.APIGroups))
	for i, g := range rule.APIGroups {
		groups[i] = groupName(g)
	}
	s := fmt.Sprintf("%s %s", strings.Join(groups, ","), strings.Join(rule.Resources, ","))
	if len(rule.ResourceNames) > 0 {
		s += " names=" + strings.Join(rule.ResourceNames, ",")
	}
	return s + " [" + strings.Join(rule.Verbs, " ") + "]"
}

// groupName shows the core API group, "", as "core".
func groupName(g string) string {
	if g == "" {
		return "core"
	}
	return g
}
