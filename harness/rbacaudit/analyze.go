package rbacaudit

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// FailureKind is what makes an audit fail.
type FailureKind string

// The failures.
const (
	// Unused: a rule grants a permission no request used.
	Unused FailureKind = "unused"
	// Forbidden: a subject's request was answered 403.
	Forbidden FailureKind = "forbidden"
	// Wildcard: a rule holds a "*".
	Wildcard FailureKind = "wildcard"
	// Unbound: no binding grants a role.
	Unbound FailureKind = "unbound"
	// MissingRole: a binding grants a role the manifests do not hold.
	MissingRole FailureKind = "missing-role"
)

// Failure is one reason the audit fails, and what to do about it.
type Failure struct {
	Kind FailureKind
	// Subject is whose request or grant it is, when it is one subject's.
	Subject string
	// Role is the role concerned, when one is.
	Role string
	What string
	Fix  string
}

// MaxExamples is how many request paths a rule's row shows.
const MaxExamples = 3

// RuleUsage is one granted rule and the requests it allowed.
type RuleUsage struct {
	Grant
	// Requests counts the requests the rule allowed, Verbs the same by
	// verb.
	Requests int
	Verbs    map[string]int
	// Examples are a few of the requests, distinct.
	Examples []string
	// Unused are the rule's permissions no request used.
	Unused []Permission
}

// RequestGroup is a set of alike requests of one subject.
type RequestGroup struct {
	User string
	// What is the request without its path (describeRequest).
	What    string
	Count   int
	Example Request
}

// Report is the outcome of an audit.
type Report struct {
	// Requests counts the requests read; Audited those of the subjects the
	// manifests bind, by subject (admission checks are not requests).
	Requests int
	Audited  map[string]int
	Rules    []RuleUsage
	// Elsewhere are subjects' requests allowed by no rule of the
	// manifests: by the API server's default roles (discovery, for one).
	Elsewhere []RequestGroup
	// Refused are the subjects' requests denied a permission the
	// manifests do not grant: each is a failure.
	Refused []RequestGroup
	// Revoked are requests denied a permission the manifests grant: the
	// live RBAC differed from them (a spec revoked a grant, or the
	// authorizer had not yet seen a new binding).
	Revoked []RequestGroup
	// Admission are requests an admission plugin or webhook refused for
	// another reason than a permission (a namespace being deleted, a
	// webhook's rule): RBAC can neither cause nor fix them.
	Admission []RequestGroup
	Failures  []Failure
}

// OK says whether the audit passed.
func (r *Report) OK() bool { return len(r.Failures) == 0 }

// Analyze matches reqs to the rules c grants: every request of a subject
// the manifests bind is credited to every rule that allows it (any one of
// them would have sufficed).
func Analyze(c *Config, reqs []Request) *Report {
	rep := &Report{Audited: map[string]int{}}
	for _, r := range reqs {
		if r.CheckedBy == "" {
			rep.Requests++
		}
	}
	grants := c.Grants()
	subjects := map[string]bool{}
	for _, g := range grants {
		if !strings.HasPrefix(g.Subject, "group:") {
			subjects[g.Subject] = true
		}
	}
	usages := make([]RuleUsage, len(grants))
	perms := make([][]Permission, len(grants))
	used := make([][]bool, len(grants))
	for i, g := range grants {
		usages[i] = RuleUsage{Grant: g, Verbs: map[string]int{}}
		perms[i] = g.Permissions()
		used[i] = make([]bool, len(perms[i]))
	}
	elsewhere, refused, revoked, admission := newGroups(), newGroups(), newGroups(), newGroups()
	for _, r := range reqs {
		if !subjects[r.User] {
			continue
		}
		if r.CheckedBy == "" {
			rep.Audited[r.User]++
		}
		if r.Forbidden() {
			switch {
			case r.Decision == "forbid" && granted(grants, perms, r):
				revoked.add(r)
			case r.Decision == "forbid":
				refused.add(r)
			case permissionRefusal(r):
				// Its admission check, a request of its own, tells.
			default:
				admission.add(r)
			}
			continue
		}
		if !r.Authorized() {
			continue
		}
		matched := false
		for i, g := range grants {
			if !g.AppliesTo(r) {
				continue
			}
			hit := false
			for j, p := range perms[i] {
				if p.Allows(r) {
					used[i][j], hit = true, true
				}
			}
			if !hit {
				continue
			}
			matched = true
			u := &usages[i]
			u.Requests++
			u.Verbs[r.Verb]++
			if ex := r.String(); len(u.Examples) < MaxExamples && !slices.Contains(u.Examples, ex) {
				u.Examples = append(u.Examples, ex)
			}
		}
		if !matched {
			elsewhere.add(r)
		}
	}
	for i := range usages {
		for j, p := range perms[i] {
			if !used[i][j] {
				usages[i].Unused = append(usages[i].Unused, p)
			}
		}
	}
	rep.Rules = usages
	rep.Elsewhere = elsewhere.list()
	rep.Refused, rep.Revoked, rep.Admission = refused.list(), revoked.list(), admission.list()

	for _, u := range usages {
		if len(u.Unused) == 0 {
			continue
		}
		unused := make([]string, len(u.Unused))
		for i, p := range u.Unused {
			unused[i] = p.String()
		}
		rep.Failures = append(rep.Failures, Failure{
			Kind: Unused, Subject: u.Subject, Role: u.Role.String(),
			What: fmt.Sprintf("rule %d (%s) grants what no request used: %s", u.Index+1, describeRule(u.Rule), strings.Join(unused, "; ")),
			Fix: "if nothing needs it, remove it (its +kubebuilder:rbac marker, then regenerate the role with controller-gen, for a generated role; " + u.Source +
				"); if a path the e2e suite does not run needs it, add a spec that runs that path",
		})
	}
	for _, g := range rep.Refused {
		rep.Failures = append(rep.Failures, Failure{
			Kind: Forbidden, Subject: g.User,
			What: fmt.Sprintf("%s: forbidden %d times, e.g. %s", g.What, g.Count, g.Example),
			Fix:  "grant it with a +kubebuilder:rbac marker (then regenerate the role with controller-gen) if it is needed, or change the code not to make the request",
		})
	}
	rep.Failures = append(rep.Failures, c.Problems()...)
	return rep
}

// groups collects alike requests in the order first seen.
type groups struct {
	index map[[2]string]int
	items []RequestGroup
}

func newGroups() *groups { return &groups{index: map[[2]string]int{}} }

func (g *groups) add(r Request) {
	key := [2]string{r.User, describeRequest(r)}
	if i, ok := g.index[key]; ok {
		g.items[i].Count++
		return
	}
	g.index[key] = len(g.items)
	g.items = append(g.items, RequestGroup{User: r.User, What: key[1], Count: 1, Example: r})
}

func (g *groups) list() []RequestGroup {
	out := slices.Clone(g.items)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].User != out[j].User {
			return out[i].User < out[j].User
		}
		return out[i].What < out[j].What
	})
	return out
}

// granted says whether a rule of the manifests allows r.
func granted(grants []Grant, perms [][]Permission, r Request) bool {
	for i, g := range grants {
		if g.AppliesTo(r) && slices.ContainsFunc(perms[i], func(p Permission) bool { return p.Allows(r) }) {
			return true
		}
	}
	return false
}

// permissionRefusal says whether r was refused by an admission plugin's
// authorization of something r implies (admissionChecks).
func permissionRefusal(r Request) bool {
	for _, words := range refusals {
		if strings.Contains(r.Message, words) {
			return true
		}
	}
	return false
}
