package rbacaudit

import (
	"fmt"
	"slices"
	"strings"
)

// Permission is one verb on one thing a rule grants: a resource (of an
// API group, possibly one named object) or a non-resource URL. A rule
// grants the product of its lists; each element is proven used on its
// own.
type Permission struct {
	Verb     string
	APIGroup string
	Resource string
	// Name is empty when the rule names no objects.
	Name string
	// URL is set for non-resource rules.
	URL string
}

func (p Permission) String() string {
	if p.URL != "" {
		return p.Verb + " " + p.URL
	}
	s := p.Verb + " " + groupName(p.APIGroup) + " " + p.Resource
	if p.Name != "" {
		s += " " + p.Name
	}
	return s
}

// Permissions expands g's rule into its permissions, in the rule's order.
func (g Grant) Permissions() []Permission {
	var out []Permission
	r := g.Rule
	for _, u := range r.NonResourceURLs {
		for _, v := range r.Verbs {
			out = append(out, Permission{Verb: v, URL: u})
		}
	}
	names := r.ResourceNames
	if len(names) == 0 {
		names = []string{""}
	}
	for _, grp := range r.APIGroups {
		for _, res := range r.Resources {
			for _, n := range names {
				for _, v := range r.Verbs {
					out = append(out, Permission{Verb: v, APIGroup: grp, Resource: res, Name: n})
				}
			}
		}
	}
	return out
}

// AppliesTo says whether g's binding grants its rule to whoever made r,
// where r was made: a RoleBinding grants resource rules in its namespace
// only, and never non-resource URLs.
func (g Grant) AppliesTo(r Request) bool {
	switch {
	case strings.HasPrefix(g.Subject, "group:"):
		if !slices.Contains(r.Groups, strings.TrimPrefix(g.Subject, "group:")) {
			return false
		}
	case g.Subject != r.User:
		return false
	}
	if g.Namespace == "" {
		return true
	}
	return r.ResourceRequest && r.Namespace == g.Namespace
}

// Allows says whether p covers r, as the RBAC authorizer matches a rule.
func (p Permission) Allows(r Request) bool {
	if p.Verb != "*" && p.Verb != r.Verb {
		return false
	}
	if !r.ResourceRequest {
		return p.URL != "" && urlMatches(p.URL, r.Path)
	}
	if p.URL != "" {
		return false
	}
	if p.APIGroup != "*" && p.APIGroup != r.APIGroup {
		return false
	}
	if !resourceMatches(p.Resource, r.Resource) {
		return false
	}
	return p.Name == "" || p.Name == r.Name
}

// resourceMatches is the RBAC authorizer's resource match: rule is
// "resource", "resource/subresource", "*" or "*/subresource"; requested is
// "resource" or "resource/subresource".
func resourceMatches(rule, requested string) bool {
	if rule == "*" || rule == requested {
		return true
	}
	_, sub, ok := strings.Cut(requested, "/")
	return ok && rule == "*/"+sub
}

// urlMatches is the RBAC authorizer's non-resource URL match: exact, or a
// prefix ending in "*".
func urlMatches(rule, path string) bool {
	if rule == "*" || rule == path {
		return true
	}
	prefix, ok := strings.CutSuffix(rule, "*")
	return ok && strings.HasPrefix(path, prefix)
}

// describeRequest is what r asked for, without its path: "get apps
// deployments name in ns".
func describeRequest(r Request) string {
	if !r.ResourceRequest {
		return r.Verb + " " + r.Path
	}
	s := fmt.Sprintf("%s %s %s", r.Verb, groupName(r.APIGroup), r.Resource)
	if r.Name != "" {
		s += " " + r.Name
	}
	if r.Namespace != "" {
		s += " in " + r.Namespace
	}
	return s
}
